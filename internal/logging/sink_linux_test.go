package logging

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// blockingPipe is a pipe whose ends are blocking descriptors, as stderr
// usually is (os.Pipe's are non-blocking and in the netpoller).
func blockingPipe(t *testing.T) (r, w *os.File) {
	t.Helper()
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	r, w = os.NewFile(uintptr(p[0]), "r"), os.NewFile(uintptr(p[1]), "w")
	t.Cleanup(func() { _ = r.Close(); _ = w.Close() })
	return r, w
}

// blockingSocketPair is a connected pair of blocking stream sockets.
func blockingSocketPair(t *testing.T) (r, w *os.File) {
	t.Helper()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	r, w = os.NewFile(uintptr(fds[0]), "r"), os.NewFile(uintptr(fds[1]), "w")
	t.Cleanup(func() { _ = r.Close(); _ = w.Close() })
	return r, w
}

func TestNewSinkKinds(t *testing.T) {
	_, pw := blockingPipe(t)
	_, sw := blockingSocketPair(t)
	file, err := os.Create(filepath.Join(t.TempDir(), "log"))
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	for _, tc := range []struct {
		name string
		f    *os.File
		want sinkKind // 0: f itself
	}{
		{"pipe", pw, sinkPipe},
		{"socket", sw, sinkSocket},
		{"dev null", null, sinkNull},
		{"regular file", file, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ws := newSink(tc.f)
			rs, ok := ws.(*rawSink)
			switch {
			case tc.want == 0 && ok:
				t.Fatalf("newSink = raw sink of kind %d, want the file itself", rs.kind)
			case tc.want == 0:
				if ws != tc.f {
					t.Fatalf("newSink = %T, want the file itself", ws)
				}
			case !ok || rs.kind != tc.want:
				t.Fatalf("newSink = %#v, want a raw sink of kind %d", ws, tc.want)
			}
		})
	}
}

// TestRawSinkWrites: lines that fit go through the raw calls, whole and
// in order; a line longer than PIPE_BUF goes to a pipe through the file.
func TestRawSinkWrites(t *testing.T) {
	for _, tc := range []struct {
		name string
		pair func(*testing.T) (*os.File, *os.File)
	}{
		{"pipe", blockingPipe},
		{"socket", blockingSocketPair},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, w := tc.pair(t)
			s := newSink(w).(*rawSink)
			long := strings.Repeat("x", pipeAtomic+1) + "\n"
			lines := []string{"first line\n", "second line\n", long, "last\n"}
			got := make(chan []byte, 1)
			go func() {
				b, _ := io.ReadAll(io.LimitReader(r, int64(len(strings.Join(lines, "")))))
				got <- b
			}()
			for _, l := range lines {
				if n, err := s.Write([]byte(l)); err != nil || n != len(l) {
					t.Fatalf("Write(%d bytes) = %d, %v", len(l), n, err)
				}
			}
			select {
			case b := <-got:
				if string(b) != strings.Join(lines, "") {
					t.Fatalf("read %d bytes, not the %d written in order", len(b), len(strings.Join(lines, "")))
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the reader did not get every line")
			}
			wantRaw, wantFallback := uint64(4), uint64(0)
			if tc.name == "pipe" {
				wantRaw, wantFallback = 3, 1 // the long line
			}
			if s.raw.Load() != wantRaw || s.fallback.Load() != wantFallback {
				t.Fatalf("raw %d, fallback %d writes; want %d and %d", s.raw.Load(), s.fallback.Load(), wantRaw, wantFallback)
			}
		})
	}
}

// TestRawSinkFullWaits: when the pipe or socket is full the raw calls
// take nothing, and the line waits in the file's write (the logging
// goroutine blocks, as before) until the reader makes room; nothing is
// lost or reordered.
func TestRawSinkFullWaits(t *testing.T) {
	for _, tc := range []struct {
		name string
		pair func(*testing.T) (*os.File, *os.File)
		fill func(t *testing.T, fd int) int
	}{
		{"pipe", blockingPipe, func(t *testing.T, fd int) int {
			// The smallest pipe (one page), filled to the last byte with
			// the descriptor made non-blocking for the while.
			if _, err := unix.FcntlInt(uintptr(fd), unix.F_SETPIPE_SZ, 4096); err != nil {
				t.Fatal(err)
			}
			if err := unix.SetNonblock(fd, true); err != nil {
				t.Fatal(err)
			}
			defer func() { _ = unix.SetNonblock(fd, false) }()
			chunk := bytes.Repeat([]byte{'.'}, 512)
			n := 0
			for {
				m, err := unix.Write(fd, chunk)
				if errors.Is(err, unix.EAGAIN) {
					return n
				}
				if err != nil {
					t.Fatal(err)
				}
				n += m
			}
		}},
		{"socket", blockingSocketPair, func(t *testing.T, fd int) int {
			if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_SNDBUF, 4096); err != nil {
				t.Fatal(err)
			}
			chunk := bytes.Repeat([]byte{'.'}, 512)
			n := 0
			for {
				m, err := unix.SendmsgN(fd, chunk, nil, nil, unix.MSG_DONTWAIT)
				if errors.Is(err, unix.EAGAIN) {
					return n
				}
				if err != nil {
					t.Fatal(err)
				}
				n += m
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, w := tc.pair(t)
			s := newSink(w).(*rawSink)
			filled := tc.fill(t, s.fd)
			if filled == 0 {
				t.Fatal("could not fill the buffer")
			}
			line := "a line that finds no room\n"
			done := make(chan error, 1)
			go func() {
				_, err := s.Write([]byte(line))
				done <- err
			}()
			select {
			case err := <-done:
				t.Fatalf("Write returned (%v) while the buffer was full", err)
			case <-time.After(100 * time.Millisecond): // the write waits: nothing to poll for
			}
			b, err := io.ReadAll(io.LimitReader(r, int64(filled+len(line))))
			if err != nil {
				t.Fatal(err)
			}
			if err := <-done; err != nil {
				t.Fatalf("Write: %v", err)
			}
			if string(b[filled:]) != line || strings.Trim(string(b[:filled]), ".") != "" {
				t.Fatalf("read %q after %d filler bytes, want the line", b[filled:], filled)
			}
			if s.fallback.Load() != 1 || s.raw.Load() != 0 {
				t.Fatalf("raw %d, fallback %d writes; want 0 and 1", s.raw.Load(), s.fallback.Load())
			}
		})
	}
}

// TestRawSinkReaderGone: a socket whose reader is gone gives the error
// of the file's own write (EPIPE), not a signal from the raw send.
func TestRawSinkReaderGone(t *testing.T) {
	r, w := blockingSocketPair(t)
	s := newSink(w).(*rawSink)
	_ = r.Close()
	_, err := s.Write([]byte("nobody reads this\n"))
	if !errors.Is(err, syscall.EPIPE) {
		t.Fatalf("Write after the reader closed: %v, want EPIPE", err)
	}
}

func TestRawSinkDevNull(t *testing.T) {
	null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	s := newSink(null).(*rawSink)
	if n, err := s.Write([]byte("gone\n")); err != nil || n != 5 || s.raw.Load() != 1 {
		t.Fatalf("Write = %d, %v, raw writes %d", n, err, s.raw.Load())
	}
}
