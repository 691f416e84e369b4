package logging

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// fakeSyslog is a syslog daemon's datagram socket in a temporary folder
// (short, for the socket path limit).
func fakeSyslog(t *testing.T) (string, *net.UnixConn) {
	t.Helper()
	dir, err := os.MkdirTemp("", "sl")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	path := filepath.Join(dir, "log")
	return path, listenSyslog(t, path)
}

func listenSyslog(t *testing.T, path string) *net.UnixConn {
	t.Helper()
	c, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func readDatagram(t *testing.T, c *net.UnixConn) string {
	t.Helper()
	require.NoError(t, c.SetReadDeadline(time.Now().Add(5*time.Second)))
	b := make([]byte, 64<<10)
	n, err := c.Read(b)
	require.NoError(t, err)
	return string(b[:n])
}

// TestSyslogLines: each entry is one RFC 3164 datagram with facility user
// and the entry's severity, the program name and PID, and the line as the
// format encodes it without its time; the atomic level still decides.
func TestSyslogLines(t *testing.T) {
	stamp := `[A-Z][a-z]{2} [ 0-9][0-9] [0-9]{2}:[0-9]{2}:[0-9]{2}`
	head := `^<(\d+)>` + stamp + ` pgd-test\[` + strconv.Itoa(os.Getpid()) + `\]: `
	tests := []struct {
		format string
		level  zapcore.Level
		pri    int
		body   string // regexp after the header
	}{
		{"text", zapcore.DebugLevel, 15, "DEBUG\thello\t" + `\{"k": "v", "n": 1\}$`},
		{"text", zapcore.InfoLevel, 14, "INFO\thello\t" + `\{"k": "v", "n": 1\}$`},
		{"text", zapcore.WarnLevel, 12, "WARN\thello\t" + `\{"k": "v", "n": 1\}$`},
		{"text", zapcore.ErrorLevel, 11, "ERROR\thello\t" + `\{"k": "v", "n": 1\}$`},
		{"structured", zapcore.InfoLevel, 14, `\{"level":"INFO","message":"hello","k":"v","n":1,"file":"logging/syslog_test.go","line":\d+\}$`},
	}
	for _, tt := range tests {
		t.Run(tt.format+" "+tt.level.String(), func(t *testing.T) {
			path, d := fakeSyslog(t)
			log, lvl, err := New(Options{Level: "debug", Format: tt.format, Syslog: "pgd-test", SyslogPaths: []string{path}})
			require.NoError(t, err)
			log.With(zap.String("k", "v")).Check(tt.level, "hello").Write(zap.Int("n", 1))
			line := readDatagram(t, d)
			m := regexp.MustCompile(head).FindStringSubmatch(line)
			require.NotNil(t, m, "header of %q", line)
			require.Equal(t, strconv.Itoa(tt.pri), m[1])
			require.Regexp(t, tt.body, line[len(m[0]):])

			// The level set at run time (SET log_level, reload) applies.
			lvl.SetLevel(zapcore.ErrorLevel)
			log.Info("dropped")
			log.Error("kept")
			require.Contains(t, readDatagram(t, d), "kept")
		})
	}
}

// TestSyslogNoDaemon: asked for syslog where no daemon listens, New fails
// naming the sockets it tried, rather than log nowhere.
func TestSyslogNoDaemon(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "none")
	_, _, err := New(Options{Syslog: "pgd-test", SyslogPaths: []string{missing}})
	require.Error(t, err)
	require.ErrorContains(t, err, `syslog_prog_name "pgd-test"`)
	require.ErrorContains(t, err, missing)
}

// TestSyslogDaemonRestarts: a daemon that comes back on a new socket at the
// same path gets the next line (one redial), and nothing is written to
// the fallback.
func TestSyslogDaemonRestarts(t *testing.T) {
	path, d := fakeSyslog(t)
	var fallback bytes.Buffer
	var counts SyslogCounts
	s, err := newSyslogSink("pgd-test", 1, []string{path}, &fallback, &counts)
	require.NoError(t, err)
	s.send(6, time.Now(), "before")
	require.Contains(t, readDatagram(t, d), "before")

	require.NoError(t, d.Close())
	require.NoError(t, os.Remove(path))
	d = listenSyslog(t, path)
	s.send(6, time.Now(), "after")
	require.Contains(t, readDatagram(t, d), "after")
	require.Zero(t, fallback.Len())
	require.Zero(t, counts.Unreachable.Load(), "the redial reached it: no failure")
}

// TestSyslogFullQueueFallsBack: a daemon that does not read fills its
// queue; sends then neither wait nor lose lines: what the queue cannot
// take goes to the fallback.
func TestSyslogFullQueueFallsBack(t *testing.T) {
	path, d := fakeSyslog(t)
	var fallback bytes.Buffer
	var counts SyslogCounts
	s, err := newSyslogSink("pgd-test", 1, []string{path}, &fallback, &counts)
	require.NoError(t, err)
	const n = 3000
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range n {
			s.send(6, time.Now(), fmt.Sprintf("line %d %s", i, strings.Repeat("x", 200)))
		}
	}()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("sends blocked on a full syslog queue")
	}
	fell := strings.Count(fallback.String(), "\n")
	require.Positive(t, fell, "the queue filled: some lines fell back")
	require.Equal(t, uint64(fell), counts.Busy.Load(), "each line that fell back is counted")
	require.Zero(t, counts.Unreachable.Load())
	got := 0
	require.NoError(t, d.SetReadDeadline(time.Now().Add(200*time.Millisecond)))
	b := make([]byte, 64<<10)
	for {
		if _, err := d.Read(b); err != nil {
			break
		}
		got++
	}
	require.Equal(t, n, got+fell, "every line went to syslog or to the fallback")
}

// TestSyslogLongLineCut: a line longer than maxSyslogMessage is cut to it,
// not refused by the socket (EMSGSIZE) or sent to the fallback.
func TestSyslogLongLineCut(t *testing.T) {
	path, d := fakeSyslog(t)
	var fallback bytes.Buffer
	s, err := newSyslogSink("pgd-test", 1, []string{path}, &fallback, nil)
	require.NoError(t, err)
	s.send(6, time.Now(), strings.Repeat("y", 10*maxSyslogMessage))
	line := readDatagram(t, d)
	require.True(t, strings.HasSuffix(line, "]: "+strings.Repeat("y", maxSyslogMessage)), "cut to %d bytes of message", maxSyslogMessage)
	require.Zero(t, fallback.Len())
}

// TestSyslogUnreachableCounted: a line no syslog daemon takes, even after
// a redial (the daemon went away), goes to stderr and is counted in
// Options.SyslogCounts as unreachable; once a daemon listens again lines
// go to it and nothing more is counted.
func TestSyslogUnreachableCounted(t *testing.T) {
	path, d := fakeSyslog(t)
	stderr, err := os.Create(filepath.Join(t.TempDir(), "stderr"))
	require.NoError(t, err)
	defer stderr.Close()
	var counts SyslogCounts
	log, _, err := build(Options{Syslog: "pgd-test", SyslogPaths: []string{path}, SyslogCounts: &counts}, stderr)
	require.NoError(t, err)
	log.Info("first")
	require.Contains(t, readDatagram(t, d), "first")

	require.NoError(t, d.Close())
	require.NoError(t, os.Remove(path))
	log.Info("daemon gone")
	log.Info("still gone")
	require.Equal(t, uint64(2), counts.Unreachable.Load())
	require.Zero(t, counts.Busy.Load())
	out, err := os.ReadFile(stderr.Name())
	require.NoError(t, err)
	require.Contains(t, string(out), "daemon gone")
	require.Contains(t, string(out), "still gone")

	d = listenSyslog(t, path)
	log.Info("back")
	require.Contains(t, readDatagram(t, d), "back")
	require.Equal(t, uint64(2), counts.Unreachable.Load())
}
