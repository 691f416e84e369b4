package floor

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func msg(typ byte, body ...byte) []byte {
	n := len(body) + 4
	return append([]byte{typ, byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)}, body...)
}

func cat(parts ...[]byte) []byte {
	var b []byte
	for _, p := range parts {
		b = append(b, p...)
	}
	return b
}

func TestScannerFeed(t *testing.T) {
	query := msg('Q', []byte("select 1\x00")...)
	ready := func(status byte) []byte { return msg('Z', status) }
	cases := []struct {
		name     string
		stream   []byte
		want     scanned
		boundary bool
	}{
		{"one query", query, scanned{syncs: 1, ended: true, lastSync: true}, true},
		{"parse bind execute sync", cat(msg('P', 0, 0, 0, 0), msg('B', 0, 0, 0, 0, 0, 0, 0), msg('E', 0, 0, 0, 0, 0), msg('S')), scanned{syncs: 1, ended: true, lastSync: true}, true},
		{"parse without sync", msg('P', 0, 0, 0, 0), scanned{ended: true}, true},
		{"ready idle", cat(msg('C', []byte("SELECT 1\x00")...), ready('I')), scanned{readys: 1, status: 'I', ended: true}, true},
		{"ready in a block", ready('T'), scanned{readys: 1, status: 'T', ended: true}, true},
		{"two answers, the last one counts", cat(ready('T'), ready('I')), scanned{readys: 2, status: 'I', ended: true}, true},
		{"terminate changes nothing else", cat(query, msg('X')), scanned{syncs: 1, ended: true, lastSync: true, terminate: true}, true},
		{"half a header", query[:3], scanned{}, false},
		{"half a body", query[:7], scanned{}, false},
		{"length below four", []byte{'Q', 0, 0, 0, 3}, scanned{bad: true}, false},
		{"length above the bound", []byte{'Q', 0x7f, 0, 0, 0}, scanned{bad: true}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var sc scanner
			got := sc.feed(tc.stream)
			require.Equal(t, tc.want, got)
			if !tc.want.bad {
				require.Equal(t, tc.boundary, sc.boundary())
			}
		})
	}
}

// TestScannerSplits feeds a stream a byte at a time and in every two-part
// split: what ends is the same as in one feed.
func TestScannerSplits(t *testing.T) {
	stream := cat(msg('T', 0, 0), msg('D', 0, 1, 0, 0, 0, 1, '1'), msg('C', []byte("SELECT 1\x00")...), msg('Z', 'I'))
	sum := func(parts ...[]byte) (readys int, status byte) {
		var sc scanner
		for _, p := range parts {
			r := sc.feed(p)
			readys += r.readys
			if r.readys > 0 {
				status = r.status
			}
		}
		require.True(t, sc.boundary())
		return readys, status
	}
	for i := range stream {
		r, s := sum(stream[:i], stream[i:])
		require.Equal(t, 1, r, "split at %d", i)
		require.Equal(t, byte('I'), s, "split at %d", i)
	}
	var bytes [][]byte
	for i := range stream {
		bytes = append(bytes, stream[i:i+1])
	}
	r, s := sum(bytes...)
	require.Equal(t, 1, r)
	require.Equal(t, byte('I'), s)
}
