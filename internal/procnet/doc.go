// Package procnet counts the sockets of this process by protocol and state
// from Linux's /proc/net/tcp, /proc/net/tcp6 and /proc/net/unix, for the
// admin console's SHOW SOCKETS and the pg_doorman_sockets metric.
//
// Those tables list every socket of the network namespace; Read keeps the
// rows whose inode is one of the process's own sockets (the "socket:[N]"
// links in /proc/self/fd), as the Rust pg_doorman does, so a busy host's
// other processes do not show up. A socket of ours found in none of the
// three tables (UDP, netlink, ...) counts as Unknown, and so may one
// closed between the fd scan and the table reads (there is no snapshot).
//
// ParseTCP and ParseUnix are pure functions over an io.Reader, fuzzed:
// input is read line by line with a bound on the line length (longer lines
// are an error, not a reallocation) and on the number of lines, so a
// strange /proc costs bounded memory and time. Malformed rows are skipped.
//
// Everything is stateless and safe for concurrent use; nothing is cached
// and no goroutine is started. Off Linux Read returns ErrUnsupported.
//
// Spec: https://www.kernel.org/doc/Documentation/networking/proc_net_tcp.txt,
// include/net/tcp_states.h and include/uapi/linux/net.h (socket_state).
package procnet
