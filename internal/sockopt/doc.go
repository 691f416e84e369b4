// Package sockopt sets the socket options pg_doorman applies that the net
// package has no call for: how long unacknowledged data may stay
// unacknowledged before the kernel drops the connection
// (general.tcp_user_timeout), on client sockets (internal/daemon) and
// server sockets (internal/backend) alike; and the listen backlog of a
// socket that already listens (general.backlog, SetBacklog), which package
// net always sets to the kernel's limit.
//
// Linux has TCP_USER_TIMEOUT (milliseconds); macOS has
// TCP_RXT_CONNDROPTIME (seconds: a timeout is rounded up to whole
// seconds). Elsewhere UserTimeoutSupported is false, and internal/config
// refuses a non-zero tcp_user_timeout instead of accepting it and doing
// nothing.
//
// It does not set the options net has calls for (keepalive, TCP_NODELAY,
// buffer sizes, linger), and it owns no socket: the caller's stays the
// caller's.
package sockopt
