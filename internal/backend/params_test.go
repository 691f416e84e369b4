package backend_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/doorman-go/doorman/internal/backend"
	"github.com/doorman-go/doorman/internal/protocol"
)

// TestParamsGen: every ParameterStatus recorded moves ParamsGen, a body
// that does not decode neither changes Params nor moves it.
func TestParamsGen(t *testing.T) {
	c := &backend.Conn{Params: map[string]string{}}
	body := func(name, value string) []byte {
		return protocol.Frame(protocol.ParameterStatus{Name: name, Value: value}.Encode(nil)).Body()
	}
	steps := []struct {
		body []byte
		gen  uint64
		want map[string]string
	}{
		{body("application_name", "a"), 1, map[string]string{"application_name": "a"}},
		{body("application_name", "a"), 2, map[string]string{"application_name": "a"}}, // reported again: a holder looks again
		{body("TimeZone", "UTC"), 3, map[string]string{"application_name": "a", "TimeZone": "UTC"}},
		{[]byte("no terminator"), 3, map[string]string{"application_name": "a", "TimeZone": "UTC"}},
	}
	for i, st := range steps {
		c.ApplyParameterStatus(st.body)
		require.Equal(t, st.gen, c.ParamsGen, "step %d", i)
		require.Equal(t, st.want, c.Params, "step %d", i)
	}
}
