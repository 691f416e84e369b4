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
