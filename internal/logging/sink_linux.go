package logging

import (
	"os"
	"sync/atomic"
	"syscall"
	"unsafe"

	"go.uber.org/zap/zapcore"
	"golang.org/x/sys/unix"
)

// pipeAtomic is PIPE_BUF: a write of at most this many bytes to a pipe
// with room is made whole, without blocking.
const pipeAtomic = 4096

type sinkKind uint8

const (
	sinkPipe sinkKind = iota + 1
	sinkSocket
	sinkNull // /dev/null: a write never blocks
)

// rawSink writes log lines to a pipe, a socket (stderr under Docker and
// under systemd's journal) or /dev/null with raw system calls that do not
// block: a send with MSG_DONTWAIT, a write of at most PIPE_BUF bytes after
// a zero-timeout ppoll found room in the pipe (only another writer of the
// same pipe, filling it between the two calls, could make that write
// wait), a write to /dev/null. A write through *os.File of a descriptor
// that is not in the netpoller (stderr is blocking) is a system call the
// scheduler sees, and the first one after the process went idle wakes the
// runtime's sysmon thread, which then polls every 20 µs for a millisecond
// or more: a login that logged its connect and disconnect paid about 40 %
// more CPU for it (docs/benchmarks-passes.md, "Thirty-seventh pass"). What
// the raw calls cannot take at once (a full pipe or socket buffer, a line
// longer than PIPE_BUF, an error) goes through f.Write as before, so a
// slow reader still blocks the logging goroutine and not its thread's P.
type rawSink struct {
	f    *os.File // the fallback, and Sync
	fd   int
	kind sinkKind

	raw, fallback atomic.Uint64 // writes each way (tests)
}

// newSink is f itself unless it is a pipe, a socket or /dev/null.
func newSink(f *os.File) zapcore.WriteSyncer {
	rc, err := f.SyscallConn()
	if err != nil {
		return f
	}
	fd := -1
	if rc.Control(func(u uintptr) { fd = int(u) }) != nil || fd < 0 {
		return f
	}
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil {
		return f
	}
	var kind sinkKind
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFIFO:
		kind = sinkPipe
	case unix.S_IFSOCK:
		kind = sinkSocket
	case unix.S_IFCHR:
		if unix.Major(st.Rdev) != 1 || unix.Minor(st.Rdev) != 3 {
			return f // a terminal, which flow control can stop
		}
		kind = sinkNull
	default:
		return f // a file: a write can sleep in the kernel (writeback, locks)
	}
	return &rawSink{f: f, fd: fd, kind: kind}
}

func (s *rawSink) Write(p []byte) (int, error) {
	n := s.tryRaw(p)
	if n == len(p) {
		s.raw.Add(1)
		return n, nil
	}
	s.fallback.Add(1)
	m, err := s.f.Write(p[n:])
	return n + m, err
}

func (s *rawSink) Sync() error { return s.f.Sync() }

// tryRaw writes what it can of p without blocking and without the
// scheduler; 0 when it could not.
func (s *rawSink) tryRaw(p []byte) int {
	if len(p) == 0 {
		return 0
	}
	switch s.kind {
	case sinkSocket:
		r, _, e := syscall.RawSyscall6(unix.SYS_SENDTO, uintptr(s.fd), uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)),
			unix.MSG_DONTWAIT|unix.MSG_NOSIGNAL, 0, 0)
		if e != 0 {
			return 0
		}
		return int(r)
	case sinkNull:
		return rawWrite(s.fd, p)
	case sinkPipe:
		if len(p) > pipeAtomic {
			return 0
		}
		pfd := unix.PollFd{Fd: int32(s.fd), Events: unix.POLLOUT}
		var zero unix.Timespec
		r, _, e := syscall.RawSyscall6(unix.SYS_PPOLL, uintptr(unsafe.Pointer(&pfd)), 1, uintptr(unsafe.Pointer(&zero)), 0, 0, 0)
		if e != 0 || r != 1 || pfd.Revents != unix.POLLOUT {
			return 0 // no room, or the reader is gone: f.Write reports it
		}
		return rawWrite(s.fd, p)
	}
	return 0
}

// rawWrite is write(2) of p to fd outside the scheduler: the bytes
// written, 0 on an error. (rawio.WriteFD is sendto, for sockets only.)
func rawWrite(fd int, p []byte) int {
	r, _, e := syscall.RawSyscall(unix.SYS_WRITE, uintptr(fd), uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
	if e != 0 {
		return 0
	}
	return int(r)
}
