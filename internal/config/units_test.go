package config

import (
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestParseDuration(t *testing.T) {
	tests := []struct {
		in      string
		want    time.Duration
		wantErr string
	}{
		{in: "5000", want: 5 * time.Second},
		{in: "0", want: 0},
		{in: "100ms", want: 100 * time.Millisecond},
		{in: "3000ms", want: 3 * time.Second},
		{in: "5s", want: 5 * time.Second},
		{in: "5m", want: 5 * time.Minute},
		{in: "1h", want: time.Hour},
		{in: "1d", want: 24 * time.Hour},
		{in: "2d", want: 48 * time.Hour},
		{in: "1h30m", want: 90 * time.Minute},
		{in: "1.5s", want: 1500 * time.Millisecond},
		{in: " 5s ", want: 5 * time.Second},
		{in: "", wantErr: "empty duration"},
		{in: "5x", wantErr: "invalid duration"},
		{in: "-5s", wantErr: "must not be negative"},
		{in: "-5", wantErr: "invalid duration"},
		{in: "s", wantErr: "invalid duration"},
		{in: "1.5d", wantErr: "invalid duration"},
		{in: "99999999999999999999", wantErr: "out of range"},
		{in: "9223372036854775807", wantErr: "out of range"},
		{in: "999999999d", wantErr: "out of range"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseDuration(tt.in)
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

func TestParseByteSize(t *testing.T) {
	tests := []struct {
		in      string
		want    ByteSize
		wantErr string
	}{
		{in: "1048576", want: 1 << 20},
		{in: "0", want: 0},
		{in: "1024B", want: 1024},
		{in: "1024b", want: 1024},
		{in: "1K", want: 1 << 10},
		{in: "1kb", want: 1 << 10},
		{in: "1M", want: 1 << 20},
		{in: "256MB", want: 256 << 20},
		{in: "256mb", want: 256 << 20},
		{in: "1G", want: 1 << 30},
		{in: "1GB", want: 1 << 30},
		{in: "8 MB", want: 8 << 20},
		{in: "", wantErr: "invalid byte size"},
		{in: "MB", wantErr: "invalid byte size"},
		{in: "1TB", wantErr: "invalid byte size"},
		{in: "1.5MB", wantErr: "invalid byte size"},
		{in: "-1", wantErr: "invalid byte size"},
		{in: "9999999999GB", wantErr: "out of range"},
		{in: "99999999999999999999", wantErr: "out of range"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseByteSize(tt.in)
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

func TestByteSizeString(t *testing.T) {
	for in, want := range map[ByteSize]string{0: "0B", 1023: "1023B", 1 << 10: "1KB", 3 << 20: "3MB", 256 << 20: "256MB", 2 << 30: "2GB", 1<<20 + 1: "1048577B"} {
		require.Equal(t, want, in.String())
		back, err := ParseByteSize(want)
		require.NoError(t, err)
		require.Equal(t, in, back)
	}
}

func TestDecodeNumbersAsDurationAndSize(t *testing.T) {
	d := &decoder{}
	got, ok := d.duration("k", int64(250))
	require.True(t, ok)
	require.Equal(t, 250*time.Millisecond, got)
	_, ok = d.duration("k", true)
	require.False(t, ok)
	size, ok := d.byteSize("k", 4096)
	require.True(t, ok)
	require.Equal(t, ByteSize(4096), size)
	_, ok = d.byteSize("k", -1)
	require.False(t, ok)
	require.Len(t, d.errs, 2)
}

func FuzzParseDuration(f *testing.F) {
	for _, s := range []string{"5000", "100ms", "5s", "5m", "1h", "1d", "1h30m", "-5s", "", "9223372036854775807", "1.5d"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseDuration(s)
		if err != nil {
			return
		}
		if d < 0 {
			t.Fatalf("ParseDuration(%q) = %v, negative", s, d)
		}
		// Milliseconds round-trip through the bare-integer form.
		ms := d.Milliseconds()
		back, err := ParseDuration(strconv.FormatInt(ms, 10))
		if err != nil || back != time.Duration(ms)*time.Millisecond {
			t.Fatalf("round trip of %q via %dms: %v, %v", s, ms, back, err)
		}
	})
}

func FuzzParseByteSize(f *testing.F) {
	for _, s := range []string{"1048576", "1024B", "1K", "1KB", "1m", "256MB", "1G", "1TB", "-1", "9999999999GB"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := ParseByteSize(s)
		if err != nil {
			return
		}
		if n < 0 {
			t.Fatalf("ParseByteSize(%q) = %d, negative", s, n)
		}
		back, err := ParseByteSize(n.String())
		if err != nil || back != n {
			t.Fatalf("round trip of %q via %s: %d, %v", s, n.String(), back, err)
		}
	})
}
