package logging

import (
	"bufio"
	"encoding/json"
	"os"
	"regexp"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
)

// TestStructuredShape: -F structured writes the seed's JSON lines:
// "timestamp" in UTC with milliseconds, "level" in capitals, "message",
// "file" and "line" of the call, and the line's own fields beside them.
func TestStructuredShape(t *testing.T) {
	r, w, err := os.Pipe()
	require.NoError(t, err)
	defer r.Close()
	defer w.Close()
	log, _, err := build(Options{Format: "Structured"}, w)
	require.NoError(t, err)
	log.With(zap.String("pool", "mydb")).Warn("backend connection lost", zap.Int("pid", 42)) // the line below is what "line" says
	_, _, line, _ := runtime.Caller(0)
	var got map[string]any
	sc := bufio.NewScanner(r)
	require.True(t, sc.Scan())
	require.NoError(t, json.Unmarshal(sc.Bytes(), &got), "%s", sc.Text())
	require.Regexp(t, regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$`), got["timestamp"])
	require.Equal(t, "WARN", got["level"])
	require.Equal(t, "backend connection lost", got["message"])
	require.Equal(t, "logging/structured_test.go", got["file"])
	require.EqualValues(t, line-1, got["line"])
	require.Equal(t, "mydb", got["pool"])
	require.EqualValues(t, 42, got["pid"])
	for _, k := range []string{"ts", "msg", "caller"} {
		require.NotContains(t, got, k)
	}
}
