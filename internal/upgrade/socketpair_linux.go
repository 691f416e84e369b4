package upgrade

import "golang.org/x/sys/unix"

// seqpacketPair makes the migration socketpair, close-on-exec from the
// start: the new binary gets its end through ExtraFiles only.
func seqpacketPair() ([2]int, error) {
	return unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
}
