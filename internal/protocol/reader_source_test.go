package protocol

import (
	"bytes"
	"errors"
	"io"
	"testing"

	"github.com/stretchr/testify/require"
)

var errWouldBlock = errors.New("would block")

// chunkSource hands out data in chunks of the given sizes, a would-block
// error between chunks, then io.EOF.
type chunkSource struct {
	data   []byte
	sizes  []int
	i      int
	primed bool
}

func (c *chunkSource) Read(p []byte) (int, error) {
	if len(c.data) == 0 {
		return 0, io.EOF
	}
	if !c.primed {
		c.primed = true
		return 0, errWouldBlock
	}
	c.primed = false
	n := min(c.sizes[c.i%len(c.sizes)], len(c.data), len(p))
	c.i++
	copy(p, c.data[:n])
	c.data = c.data[n:]
	return n, nil
}

// TestReaderSetSourceKeepsBuffered switches a reader between a
// non-blocking source and a blocking one in the middle of messages: every
// frame comes out whole and in order, as an event loop handing a
// connection to a goroutine needs.
func TestReaderSetSourceKeepsBuffered(t *testing.T) {
	t.Parallel()
	stream := sampleStream(40, []byte("some value"))
	want := splitFrames(stream)
	for _, sizes := range [][]int{{1}, {3, 7}, {50}, {4096}} {
		nb := &chunkSource{data: stream, sizes: sizes}
		r := NewReader(nb, 64, 0)
		var got [][]byte
		blocking := false
		for i := 0; ; i++ {
			if i%5 == 4 { // hand over: the rest of nb's data, read without would-block
				blocking = !blocking
				if blocking {
					r.SetSource(readerFunc(func(p []byte) (int, error) {
						for {
							n, err := nb.Read(p)
							if !errors.Is(err, errWouldBlock) {
								return n, err
							}
						}
					}))
				} else {
					r.SetSource(nb)
				}
			}
			f, err := r.Next()
			if errors.Is(err, errWouldBlock) {
				require.False(t, blocking)
				continue
			}
			if err == io.EOF {
				break
			}
			require.NoError(t, err)
			got = append(got, bytes.Clone(f))
		}
		require.Equal(t, want, got, "chunk sizes %v", sizes)
	}
}

type readerFunc func([]byte) (int, error)

func (f readerFunc) Read(p []byte) (int, error) { return f(p) }

func TestReaderReadSome(t *testing.T) {
	t.Parallel()
	q := Query{String: "select 1"}.Encode(nil)
	two := append(bytes.Clone(q), q...)
	src := bytes.NewReader(two)
	r := NewReader(src, 32, 0)
	r.Release()
	require.Empty(t, r.Unread())
	require.Equal(t, 32, r.Free())

	n, err := r.ReadSome()
	require.NoError(t, err)
	require.Equal(t, 28, n) // both queries, one call
	require.Equal(t, two, r.Unread())
	require.Equal(t, 32-28, r.Free())

	f, err := r.Next()
	require.NoError(t, err)
	require.Equal(t, Frame(q), f)
	require.Equal(t, q, r.Unread())
	require.Equal(t, 32-14, r.Free()) // the taken frame's room counts

	n, err = r.ReadSome() // nothing more: the source's EOF
	require.Equal(t, 0, n)
	require.ErrorIs(t, err, io.EOF)
	f, err = r.Next()
	require.NoError(t, err)
	require.Equal(t, Frame(q), f)
	require.Equal(t, 0, r.Buffered())

	// A full buffer reads nothing.
	full := NewReader(bytes.NewReader(bytes.Repeat(q, 4)), 14, 0)
	n, err = full.ReadSome()
	require.NoError(t, err)
	require.Equal(t, 14, n)
	n, err = full.ReadSome()
	require.NoError(t, err)
	require.Equal(t, 0, n)
}
