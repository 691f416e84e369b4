package upgrade

import (
	"io"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func pair(t *testing.T) (*Channel, *Channel) {
	t.Helper()
	a, b, err := socketpair()
	require.NoError(t, err)
	ca, err := newChannel(a)
	require.NoError(t, err)
	cb, err := newChannel(b)
	require.NoError(t, err)
	t.Cleanup(func() { _ = ca.Close(); _ = cb.Close() })
	return ca, cb
}

// TestChannelPassesRecordAndDescriptor: the receiver gets the record and
// a working descriptor of the same file.
func TestChannelPassesRecordAndDescriptor(t *testing.T) {
	old, nu := pair(t)
	r, w, err := os.Pipe()
	require.NoError(t, err)
	defer r.Close()
	require.NoError(t, old.Send([]byte(`{"user":"app"}`), w))
	require.NoError(t, w.Close(), "the sender's copy is its own")
	rec, f, err := nu.Receive()
	require.NoError(t, err)
	require.Equal(t, `{"user":"app"}`, string(rec))
	_, err = f.Write([]byte("hello"))
	require.NoError(t, err)
	require.NoError(t, f.Close())
	got, err := io.ReadAll(r)
	require.NoError(t, err)
	require.Equal(t, "hello", string(got))
}

func TestChannelBounds(t *testing.T) {
	old, nu := pair(t)
	f, err := os.Open(os.DevNull)
	require.NoError(t, err)
	defer f.Close()
	require.ErrorIs(t, old.Send(make([]byte, MaxRecord+1), f), ErrRecordTooLarge)
	require.NoError(t, old.Send(make([]byte, MaxRecord), f), "a record of MaxRecord fits")
	rec, g, err := nu.Receive()
	require.NoError(t, err)
	require.Len(t, rec, MaxRecord)
	require.NoError(t, g.Close())

	// A record without a descriptor (a confused or hostile sender) is refused.
	_, err = old.c.Write([]byte("no fd"))
	require.NoError(t, err)
	_, _, err = nu.Receive()
	require.ErrorContains(t, err, "0 descriptors")

	require.NoError(t, old.Close())
	_, _, err = nu.Receive()
	require.Error(t, err, "the other end closed")
}

func TestFromFlags(t *testing.T) {
	in, err := FromFlags(nil)
	require.NoError(t, err)
	require.Nil(t, in)
	for _, bad := range []string{"tcp", "tcp=x", "tcp=1", "bogus=900"} {
		_, err := FromFlags([]string{bad})
		require.Error(t, err, bad)
		require.True(t, strings.Contains(err.Error(), "inherit-fd") || strings.Contains(err.Error(), "listener"), err.Error())
	}
}
