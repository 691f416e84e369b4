package pam

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestCheckInput(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name              string
		service, user, pw string
		want              string // error substring; "" for nil
		authFailed        bool
	}{
		{name: "ok", service: "pg_doorman", user: "alice", pw: "secret"},
		{name: "longest password", service: "s", user: "u", pw: strings.Repeat("p", MaxPasswordLen)},
		{name: "empty service", user: "u", pw: "secret-pw", want: "empty service name"},
		{name: "service with slash", service: "../shadow", user: "u", pw: "secret-pw", want: "not a file name"},
		{name: "service dot dot", service: "..", user: "u", pw: "secret-pw", want: "not a file name"},
		{name: "service with NUL", service: "a\x00b", user: "u", pw: "secret-pw", want: "not a file name"},
		{name: "empty user", service: "s", pw: "secret-pw", want: "empty user name"},
		{name: "user with NUL", service: "s", user: "al\x00ice", pw: "secret-pw", want: "user name contains a NUL"},
		{name: "password too long", service: "s", user: "u", pw: strings.Repeat("p", MaxPasswordLen+1), want: "longer than 1024 bytes"},
		{name: "password with NUL", service: "s", user: "u", pw: "se\x00cret", want: "password contains a NUL"},
		{name: "empty password", service: "s", user: "u", want: "empty password", authFailed: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := checkInput(tt.service, tt.user, tt.pw)
			if tt.want == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tt.want)
			require.Equal(t, tt.authFailed, errors.Is(err, ErrAuthFailed))
			if tt.pw != "" {
				require.NotContains(t, err.Error(), tt.pw)
			}
		})
	}
}

func TestNewRejectsZero(t *testing.T) {
	t.Parallel()
	require.PanicsWithValue(t, "BUG: pam.New(0): max must be at least 1", func() { New(0) })
}
