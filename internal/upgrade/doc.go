// Package upgrade is the process side of pg_doorman's binary upgrade: the
// old process starts the new one from the same binary path, hands it the
// listening sockets, waits until it is ready, and then passes it idle
// clients one by one, each as its socket (SCM_RIGHTS) plus a small state
// record the session package defines.
//
// Spawn (old process) first runs the binary with -t on the config file, so
// a bad config aborts the upgrade before anything changed; then it starts
// the binary with the listeners, one end of a SOCK_SEQPACKET socketpair
// (the migration channel) and the write end of a readiness pipe as
// inherited files, described by --inherit-fd kind=N flags, and waits at
// most ReadyTimeout for one byte on the pipe, logging those steps in the
// seed's words to SpawnOptions.Log. Inherited (new process) turns those
// flags back into listeners, the channel and the pipe.
//
// A Channel carries one record per message: at most MaxRecord bytes and
// exactly one file descriptor. Send is safe for concurrent use; Receive is
// used by one goroutine. Every descriptor received is the receiver's to
// close. The package knows nothing of sessions, pools or PostgreSQL.
//
// Spec: seed 002, "Binary upgrade"; unix(7) SCM_RIGHTS; sd_notify(3).
package upgrade
