package procnet

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzParse: any input either fails with an error or yields counts that
// do not exceed the number of lines read, and never panics.
func FuzzParse(f *testing.F) {
	for _, name := range []string{"tcp", "tcp6", "unix"} {
		b, err := os.ReadFile(filepath.Join("testdata", "net", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("h\n0: a b 0A c d e f g 1\n"))
	f.Add([]byte("h\n0: 1 0 0 0001 03 1664\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		lines := strings.Count(string(b), "\n") + 1
		tcp, err := ParseTCP(strings.NewReader(string(b)), nil, nil)
		if err == nil && tcp.Total() > lines {
			t.Fatalf("%d TCP sockets from %d lines", tcp.Total(), lines)
		}
		unix, err := ParseUnix(strings.NewReader(string(b)), func(i uint64) bool { return i%2 == 0 }, nil)
		if err == nil && unix.Total() > lines {
			t.Fatalf("%d unix sockets from %d lines", unix.Total(), lines)
		}
	})
}
