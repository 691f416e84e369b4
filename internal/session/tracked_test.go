package session

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestTrackedParams(t *testing.T) {
	welcome := map[string]string{
		"application_name": "app", "TimeZone": "UTC", "server_version": "15.8",
		"in_hot_standby": "off", "integer_datetimes": "on",
	}
	var p trackedParams
	p.fromMap(welcome)
	tests := []struct {
		i      int
		want   string
		wantOK bool
	}{
		{appNameParam, "app", true},
		{2, "UTC", true},            // TimeZone
		{0, "", false},              // client_encoding was not in the welcome
		{roleIndex(0), "off", true}, // in_hot_standby
		{roleIndex(1), "", false},   // default_transaction_read_only
	}
	for _, tt := range tests {
		v, ok := p.get(tt.i)
		require.Equal(t, tt.want, v, trackedName(tt.i))
		require.Equal(t, tt.wantOK, ok, trackedName(tt.i))
	}
	p.putName("server_version", "16") // not tracked: dropped
	p.putName("default_transaction_read_only", "on")
	require.Equal(t, map[string]string{"application_name": "app", "TimeZone": "UTC", "in_hot_standby": "off", "default_transaction_read_only": "on"}, p.toMap())
	require.Equal(t, "TimeZone", trackedName(2), "indexes follow syncedParams, then roleParams")
}

// Sessions told the same welcome share one snapshot; a change copies it
// for that session only, and a value that does not change copies nothing.
func TestTrackedRefSharedCopyOnWrite(t *testing.T) {
	var share trackedShare
	welcome := map[string]string{"client_encoding": "UTF8", "TimeZone": "UTC", "server_version": "15"}
	var a, b, c trackedRef
	a.fromMap(welcome, &share)
	b.fromMap(map[string]string{"client_encoding": "UTF8", "TimeZone": "UTC"}, &share)
	require.Same(t, a.p, b.p, "the same tracked values share one snapshot")

	snap := a.p
	a.put(2, "UTC")
	require.Same(t, snap, a.p, "putting the value it has copies nothing")
	a.putName("TimeZone", "Europe/Berlin")
	require.NotSame(t, snap, a.p)
	v, ok := a.get(2)
	require.True(t, ok)
	require.Equal(t, "Europe/Berlin", v)
	v, _ = b.get(2)
	require.Equal(t, "UTC", v, "the shared snapshot is not written")
	require.Equal(t, "UTC", share.last.Load().v[2])

	c.fromMap(map[string]string{"client_encoding": "LATIN1"}, &share)
	require.NotSame(t, b.p, c.p, "other values: a snapshot of their own, shared from now on")
	require.Same(t, c.p, share.last.Load())

	var zero trackedRef
	_, ok = zero.get(0)
	require.False(t, ok)
	require.Empty(t, zero.toMap())
	require.Equal(t, map[string]string{"client_encoding": "UTF8", "TimeZone": "UTC"}, b.toMap())
}
