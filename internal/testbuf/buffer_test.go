package testbuf

import (
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestBuffer: writes from several goroutines all land, whole, and String
// may run meanwhile (the race detector checks the locking).
func TestBuffer(t *testing.T) {
	var b Buffer
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 100; j++ {
				n, err := b.Write([]byte("line\n"))
				require.NoError(t, err)
				require.Equal(t, 5, n)
				_ = b.String()
			}
		}()
	}
	wg.Wait()
	require.Equal(t, strings.Repeat("line\n", 800), b.String())
}
