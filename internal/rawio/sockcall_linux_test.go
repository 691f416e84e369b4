package rawio

import (
	"syscall"
	"testing"
	"unsafe"
)

// BenchmarkReadFDEmpty: a read that finds the socket empty (one per
// transaction in pg_doorman's session, section 5 of docs/benchmarks.md)
// as ReadFD makes it (recvfrom) and as read(2) would. On the 2-CPU
// machine of 2026-12-03: about 655 against 755 ns.
func BenchmarkReadFDEmpty(b *testing.B) {
	c, _ := pair(b, "tcp")
	var fd uintptr
	if err := c.rc.Control(func(f uintptr) { fd = f }); err != nil {
		b.Fatal(err)
	}
	buf := make([]byte, 8192)
	b.Run("recvfrom", func(b *testing.B) {
		for range b.N {
			if _, e := ReadFD(fd, buf); e != syscall.EAGAIN {
				b.Fatal(e)
			}
		}
	})
	b.Run("read", func(b *testing.B) {
		for range b.N {
			_, _, e := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf)))
			if e != syscall.EAGAIN {
				b.Fatal(e)
			}
		}
	})
}
