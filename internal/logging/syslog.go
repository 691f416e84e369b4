package logging

import (
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"go.uber.org/zap/zapcore"

	"github.com/doorman-go/doorman/internal/rawio"
)

// defaultSyslogPaths are the sockets a local syslog daemon listens on
// (Linux, macOS, the BSDs), tried in this order, as glibc's syslog(3) and
// Go's log/syslog try them.
func defaultSyslogPaths() []string { return []string{"/dev/log", "/var/run/syslog", "/var/run/log"} }

// facilityUser is LOG_USER, the facility the Rust pg_doorman logs with.
const facilityUser = 1

// maxSyslogMessage bounds one datagram: a longer line is cut, not refused
// by the socket (EMSGSIZE). Syslog daemons keep 8 KiB by default anyway.
const maxSyslogMessage = 16 << 10

// syslogCore is a zapcore.Core that sends each entry as one RFC 3164
// datagram ("<PRI>Mmm dd hh:mm:ss TAG[PID]: MSG", what glibc's syslog(3)
// sends to /dev/log), its severity from the entry's level. The encoder
// leaves the time out: syslog stamps it.
type syslogCore struct {
	zapcore.LevelEnabler
	enc  zapcore.Encoder
	sink *syslogSink
}

func (c *syslogCore) With(fields []zapcore.Field) zapcore.Core {
	enc := c.enc.Clone()
	for _, f := range fields {
		f.AddTo(enc)
	}
	return &syslogCore{LevelEnabler: c.LevelEnabler, enc: enc, sink: c.sink}
}

func (c *syslogCore) Check(ent zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if c.Enabled(ent.Level) {
		return ce.AddCore(ent, c)
	}
	return ce
}

func (c *syslogCore) Write(ent zapcore.Entry, fields []zapcore.Field) error {
	buf, err := c.enc.EncodeEntry(ent, fields)
	if err != nil {
		return fmt.Errorf("encode log entry: %w", err)
	}
	c.sink.send(severity(ent.Level), ent.Time, strings.TrimRight(buf.String(), "\n"))
	buf.Free()
	return nil
}

func (c *syslogCore) Sync() error { return nil }

// severity maps a zap level to a syslog severity.
func severity(l zapcore.Level) int {
	switch {
	case l <= zapcore.DebugLevel:
		return 7 // LOG_DEBUG
	case l == zapcore.InfoLevel:
		return 6 // LOG_INFO
	case l == zapcore.WarnLevel:
		return 4 // LOG_WARNING
	case l == zapcore.ErrorLevel:
		return 3 // LOG_ERR
	}
	return 2 // LOG_CRIT: DPanic, Panic, Fatal
}

// SyslogCounts count the lines a syslog logger could not send, each then
// written to stderr instead (Options.SyslogCounts): Busy when the
// daemon's queue was full, Unreachable when no daemon took it after one
// redial. Safe for concurrent use; pg_doorman's metrics exporter reads
// them.
type SyslogCounts struct {
	Busy, Unreachable atomic.Uint64
}

// syslogSink owns the datagram socket to the syslog daemon. A send never
// waits: a line the daemon's queue cannot take at once, or that no daemon
// takes after one redial (it restarted, it is gone), is written to
// fallback (stderr) instead, and counted, so that logging never stalls the
// goroutine that logs (the transaction core among them) and no line is
// lost.
type syslogSink struct {
	tag      string
	pid      int
	paths    []string
	fallback io.Writer
	counts   *SyslogCounts // never nil

	mu   sync.Mutex
	conn *net.UnixConn // nil after a failed send: dialled again at the next
	buf  []byte
}

// newSyslogSink connects to the first of paths that a daemon listens on;
// an error names them all when none does. Lines that fall back are
// counted in counts (nil: in counts of its own, read by nobody).
func newSyslogSink(tag string, pid int, paths []string, fallback io.Writer, counts *SyslogCounts) (*syslogSink, error) {
	if counts == nil {
		counts = new(SyslogCounts)
	}
	s := &syslogSink{tag: tag, pid: pid, paths: paths, fallback: fallback, counts: counts}
	if err := s.dial(); err != nil {
		return nil, err
	}
	return s, nil
}

// dial connects to the first path that takes a datagram connection.
// Called under mu, or before the sink is shared.
func (s *syslogSink) dial() error {
	var why []string
	for _, p := range s.paths {
		c, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: p, Net: "unixgram"})
		if err == nil {
			s.conn = c
			return nil
		}
		var oe *net.OpError
		if errors.As(err, &oe) {
			err = oe.Err // the path is said once, below
		}
		why = append(why, p+": "+err.Error())
	}
	return fmt.Errorf("no syslog daemon listens on %s", strings.Join(why, "; "))
}

func (s *syslogSink) send(sev int, t time.Time, msg string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b := append(s.buf[:0], '<')
	b = strconv.AppendInt(b, int64(facilityUser*8+sev), 10)
	b = append(b, '>')
	b = t.AppendFormat(b, time.Stamp)
	b = append(b, ' ')
	b = append(b, s.tag...)
	b = append(b, '[')
	b = strconv.AppendInt(b, int64(s.pid), 10)
	b = append(b, "]: "...)
	if len(msg) > maxSyslogMessage {
		msg = msg[:maxSyslogMessage]
	}
	b = append(b, msg...)
	s.buf = b
	switch s.try(b) {
	case 0:
		return
	case syscall.EAGAIN:
		// The daemon is behind: its queue is full.
		s.counts.Busy.Add(1)
	default:
		// Restarted (its socket made anew: ECONNREFUSED) or gone: one
		// redial per line.
		s.close()
		if s.dial() == nil && s.try(b) == 0 {
			return
		}
		s.counts.Unreachable.Add(1)
	}
	line := t.AppendFormat(make([]byte, 0, len(msg)+32), "2006-01-02T15:04:05.000Z0700")
	line = append(line, '\t')
	line = append(line, msg...)
	_, _ = s.fallback.Write(append(line, '\n'))
}

// try sends b with one raw call on the non-blocking socket: 0 once sent,
// else the errno (EAGAIN: no room now), without waiting and without a
// system call the Go scheduler sees (see sink_linux.go).
func (s *syslogSink) try(b []byte) syscall.Errno {
	if s.conn == nil {
		return syscall.ENOTCONN
	}
	rc, err := s.conn.SyscallConn()
	if err != nil {
		return syscall.EBADF
	}
	errno := syscall.Errno(0)
	if err := rc.Write(func(fd uintptr) bool {
		_, errno = rawio.WriteFD(fd, b)
		return true // never wait for room
	}); err != nil {
		return syscall.EBADF
	}
	return errno
}

func (s *syslogSink) close() {
	if s.conn != nil {
		_ = s.conn.Close()
		s.conn = nil
	}
}
