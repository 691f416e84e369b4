// Package logging builds the zap loggers of the three daemons: text (the
// default, human-readable, optionally coloured) or structured (JSON), with
// an atomic level that the admin console and reload can change at run
// time. ParseLevel is the one reader of level strings (config, -l, reload,
// SET log_level), so what pg_doorman -t accepts is what the process runs
// with. It deliberately has no per-module levels (zap has none): module
// directives fold into one global level, see ParseLevel.
//
// New writes to stderr; the returned zap.AtomicLevel is safe for concurrent
// use and, with the syslog socket a syslog logger keeps (and redials)
// under its mutex, the only mutable state. On Linux, when stderr is a pipe, a
// socket (systemd's journal) or /dev/null, a line is written with a raw
// system call that does not block (sink_linux.go), so that logging does not
// wake the Go runtime's sysmon thread; what such a call cannot take at
// once goes through the ordinary write, which may block the logging
// goroutine as before. A file or a terminal is written as before.
//
// With Options.Syslog (general.syslog_prog_name) the lines go to the local
// syslog daemon instead, one RFC 3164 datagram each (syslog.go), sent
// without waiting; a line the daemon cannot take falls back to stderr and
// is counted in Options.SyslogCounts (atomics the caller owns and the
// metrics exporter reads).
// Log files and rotation are not done here.
package logging
