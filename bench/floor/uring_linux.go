package floor

import (
	"fmt"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/doorman-go/doorman/internal/rawio"
)

// uring is ModeUring: one loop that blocks its OS thread in io_uring_enter,
// with every socket's receive and every send an entry of one io_uring, so
// that one system call submits all the sends a batch of completions asks
// for and waits for the next completions, where an epoll loop makes one
// call per read, per write and per wait. Each pair keeps one receive
// outstanding per side; its completion becomes a send to the other side,
// linked to the side's next receive into the same buffer, so a buffer is
// never received into while a send of it is in flight and a side is not
// read while the other has not taken what it sent.
type uring struct {
	mu     sync.Mutex
	adds   [][2]int // descriptor pairs add handed over, taken by the loop
	closed bool
	wakeFD int // eventfd: add and close write it, the loop has a read of it outstanding
	ready  chan error
	done   chan struct{}
}

// The loop's own.
type uringLoop struct {
	ring   *ring
	pairs  map[uint64]*uringPair
	nextID uint64
	wake   [8]byte
}

type uringPair struct {
	id   uint64
	fd   [2]int
	buf  [2][]byte
	sent [2]int32 // the length of side's send in flight
	eof  [2]bool  // side has sent EOF, passed on as a half-close
}

// io_uring's ABI (linux/io_uring.h); golang.org/x/sys/unix has only the
// system call numbers.
const (
	ioringSetupSingleIssuer = 1 << 12
	ioringSetupDeferTaskrun = 1 << 13
	ioringFeatSingleMmap    = 1 << 0
	ioringEnterGetevents    = 1 << 0
	ioringOpRead            = 22
	ioringOpSend            = 26
	ioringOpRecv            = 27
	iosqeIOLink             = 1 << 2
	ioringOffSQRing         = 0
	ioringOffCQRing         = 0x8000000
	ioringOffSQEs           = 0x10000000
)

// uringBufSize is each side's receive buffer.
const uringBufSize = 16 << 10

// user_data: the pair's id, the side and the operation.
const (
	uringRecv = 1
	uringSend = 2
	uringWake = 3
)

func userData(id uint64, side, op int) uint64 { return id<<3 | uint64(side)<<2 | uint64(op) }

func newUring() (*uring, error) {
	u := &uring{wakeFD: -1, ready: make(chan error, 1), done: make(chan struct{})}
	fd, err := unix.Eventfd(0, unix.EFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("eventfd: %w", err)
	}
	u.wakeFD = fd
	go u.run()
	if err := <-u.ready; err != nil {
		<-u.done
		return nil, err
	}
	return u, nil
}

func (u *uring) add(client, server *net.TCPConn) {
	cfd, sfd, ok := takePair(client, server)
	if !ok {
		return
	}
	u.mu.Lock()
	if u.closed {
		u.mu.Unlock()
		rawio.CloseFDs(cfd, sfd)
		return
	}
	u.adds = append(u.adds, [2]int{cfd, sfd})
	u.mu.Unlock()
	u.poke()
}

func (u *uring) poke() {
	one := [8]byte{1}
	_, _ = unix.Write(u.wakeFD, one[:])
}

func (u *uring) close() {
	u.mu.Lock()
	was := u.closed
	u.closed = true
	u.mu.Unlock()
	if !was {
		u.poke()
	}
	<-u.done
}

func (u *uring) run() {
	defer close(u.done)
	// The ring is set up, submitted to and waited on by this thread only
	// (IORING_SETUP_SINGLE_ISSUER and DEFER_TASKRUN: completions are run
	// when this thread waits for them).
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	r, err := newRing(256, ioringSetupSingleIssuer|ioringSetupDeferTaskrun)
	if err != nil {
		_ = unix.Close(u.wakeFD)
		u.ready <- err
		return
	}
	u.ready <- nil
	l := &uringLoop{ring: r, pairs: map[uint64]*uringPair{}}
	defer func() {
		for _, p := range l.pairs {
			rawio.CloseFDs(p.fd[0], p.fd[1])
		}
		r.close()
		_ = unix.Close(u.wakeFD)
	}()
	l.armWake(u.wakeFD)
	for {
		if err := r.enter(1); err != nil {
			return
		}
		for {
			c, ok := r.next()
			if !ok {
				break
			}
			if c.userData&7 == uringWake {
				if !u.woken(l) {
					return
				}
				l.armWake(u.wakeFD)
				continue
			}
			l.complete(c)
		}
	}
}

// woken takes the adds; false once closed.
func (u *uring) woken(l *uringLoop) bool {
	u.mu.Lock()
	adds, closed := u.adds, u.closed
	u.adds = nil
	u.mu.Unlock()
	for _, a := range adds {
		if closed {
			rawio.CloseFDs(a[0], a[1])
			continue
		}
		l.nextID++
		p := &uringPair{id: l.nextID, fd: a, buf: [2][]byte{make([]byte, uringBufSize), make([]byte, uringBufSize)}}
		l.pairs[p.id] = p
		l.recv(p, 0)
		l.recv(p, 1)
	}
	return !closed
}

func (l *uringLoop) armWake(fd int) {
	l.ring.push(sqe{opcode: ioringOpRead, fd: int32(fd), addr: uint64(uintptr(unsafe.Pointer(&l.wake[0]))), len: 8, userData: uringWake})
}

func (l *uringLoop) recv(p *uringPair, side int) {
	l.ring.push(sqe{opcode: ioringOpRecv, fd: int32(p.fd[side]),
		addr: uint64(uintptr(unsafe.Pointer(&p.buf[side][0]))), len: uint32(len(p.buf[side])), userData: userData(p.id, side, uringRecv)})
}

// complete handles one completion of a pair's receive or send.
func (l *uringLoop) complete(c cqe) {
	id, side, op := c.userData>>3, int(c.userData>>2&1), int(c.userData&3)
	p := l.pairs[id]
	if p == nil {
		return // of a pair already dropped
	}
	switch {
	case op == uringSend && c.res == p.sent[side]:
		return // whole; the side's receive, linked to it, follows
	case op == uringRecv && c.res == 0 && !p.eof[1-side]:
		// End of file: passed on as a half-close, and the side is not
		// received from again. Everything it sent before was sent on
		// (its receives follow its sends).
		p.eof[side] = true
		_ = unix.Shutdown(p.fd[1-side], unix.SHUT_WR)
		return
	case op == uringSend || c.res <= 0:
		// A short send, an error, the second end of file, or a receive
		// cancelled because its linked send failed: the pair is over. A
		// receive still in flight holds its socket open past a close:
		// shutdown ends it (it completes with 0, for no pair).
		delete(l.pairs, id)
		for _, fd := range p.fd {
			_ = unix.Shutdown(fd, unix.SHUT_RDWR)
		}
		rawio.CloseFDs(p.fd[0], p.fd[1])
		return
	}
	// The bytes go to the other side; the side's next receive, into the
	// same buffer, starts when that send has completed.
	p.sent[side] = c.res
	l.ring.push(sqe{opcode: ioringOpSend, flags: iosqeIOLink, fd: int32(p.fd[1-side]),
		addr: uint64(uintptr(unsafe.Pointer(&p.buf[side][0]))), len: uint32(c.res), opFlags: unix.MSG_WAITALL,
		userData: userData(p.id, side, uringSend)})
	l.recv(p, side)
}

// ring is one io_uring: its submission and completion rings mapped from
// the kernel.
type ring struct {
	fd                 int
	sqRing, cqRing     []byte
	sqesMem            []byte
	sqes               []sqe
	sqHead, sqTail     *uint32
	sqMask             uint32
	sqArray            []uint32
	cqHead, cqTail     *uint32
	cqMask             uint32
	cqes               []cqe
	pending            uint32 // entries pushed and not yet submitted
	sqTailLocal        uint32
	params             ringParams
	singleMmap         bool
	sqRingSz, cqRingSz int
}

type sqe struct {
	opcode      uint8
	flags       uint8
	ioprio      uint16
	fd          int32
	off         uint64
	addr        uint64
	len         uint32
	opFlags     uint32
	userData    uint64
	bufIndex    uint16
	personality uint16
	spliceFdIn  int32
	addr3       uint64
	_           uint64
}

type cqe struct {
	userData uint64
	res      int32
	flags    uint32
}

type sqOffsets struct {
	head, tail, ringMask, ringEntries, flags, dropped, array, resv1 uint32
	userAddr                                                        uint64
}

type cqOffsets struct {
	head, tail, ringMask, ringEntries, overflow, cqes, flags, resv1 uint32
	userAddr                                                        uint64
}

type ringParams struct {
	sqEntries, cqEntries, flags, sqThreadCPU, sqThreadIdle, features, wqFD uint32
	resv                                                                   [3]uint32
	sqOff                                                                  sqOffsets
	cqOff                                                                  cqOffsets
}

func newRing(entries uint32, flags uint32) (*ring, error) {
	r := &ring{}
	r.params.flags = flags
	fd, _, errno := unix.Syscall(unix.SYS_IO_URING_SETUP, uintptr(entries), uintptr(unsafe.Pointer(&r.params)), 0)
	if errno != 0 {
		return nil, fmt.Errorf("io_uring_setup: %w", errno)
	}
	r.fd = int(fd)
	p := &r.params
	r.sqRingSz = int(p.sqOff.array + p.sqEntries*4)
	r.cqRingSz = int(p.cqOff.cqes + p.cqEntries*uint32(unsafe.Sizeof(cqe{})))
	r.singleMmap = p.features&ioringFeatSingleMmap != 0
	if r.singleMmap {
		r.sqRingSz = max(r.sqRingSz, r.cqRingSz)
		r.cqRingSz = r.sqRingSz
	}
	var err error
	if r.sqRing, err = unix.Mmap(r.fd, ioringOffSQRing, r.sqRingSz, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE); err != nil {
		_ = unix.Close(r.fd)
		return nil, fmt.Errorf("mmap sq ring: %w", err)
	}
	r.cqRing = r.sqRing
	if !r.singleMmap {
		if r.cqRing, err = unix.Mmap(r.fd, ioringOffCQRing, r.cqRingSz, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE); err != nil {
			r.close()
			return nil, fmt.Errorf("mmap cq ring: %w", err)
		}
	}
	r.sqesMem, err = unix.Mmap(r.fd, ioringOffSQEs, int(p.sqEntries)*int(unsafe.Sizeof(sqe{})), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		r.close()
		return nil, fmt.Errorf("mmap sqes: %w", err)
	}
	r.sqes = unsafe.Slice((*sqe)(unsafe.Pointer(&r.sqesMem[0])), p.sqEntries)
	r.sqHead = (*uint32)(unsafe.Pointer(&r.sqRing[p.sqOff.head]))
	r.sqTail = (*uint32)(unsafe.Pointer(&r.sqRing[p.sqOff.tail]))
	r.sqMask = *(*uint32)(unsafe.Pointer(&r.sqRing[p.sqOff.ringMask]))
	r.sqArray = unsafe.Slice((*uint32)(unsafe.Pointer(&r.sqRing[p.sqOff.array])), p.sqEntries)
	r.cqHead = (*uint32)(unsafe.Pointer(&r.cqRing[p.cqOff.head]))
	r.cqTail = (*uint32)(unsafe.Pointer(&r.cqRing[p.cqOff.tail]))
	r.cqMask = *(*uint32)(unsafe.Pointer(&r.cqRing[p.cqOff.ringMask]))
	r.cqes = unsafe.Slice((*cqe)(unsafe.Pointer(&r.cqRing[p.cqOff.cqes])), p.cqEntries)
	r.sqTailLocal = atomic.LoadUint32(r.sqTail)
	return r, nil
}

func (r *ring) close() {
	if r.sqesMem != nil {
		_ = unix.Munmap(r.sqesMem)
	}
	if r.sqRing != nil {
		_ = unix.Munmap(r.sqRing)
	}
	if r.cqRing != nil && !r.singleMmap {
		_ = unix.Munmap(r.cqRing)
	}
	_ = unix.Close(r.fd)
}

// push queues e; a full submission ring is submitted first.
func (r *ring) push(e sqe) {
	if r.sqTailLocal-atomic.LoadUint32(r.sqHead) == uint32(len(r.sqes)) {
		_ = r.enter(0)
	}
	i := r.sqTailLocal & r.sqMask
	r.sqes[i] = e
	r.sqArray[i] = i
	r.sqTailLocal++
	atomic.StoreUint32(r.sqTail, r.sqTailLocal)
	r.pending++
}

// enter submits what push queued and waits for at least wait completions.
func (r *ring) enter(wait uint32) error {
	var flags uintptr
	if wait > 0 {
		flags = ioringEnterGetevents
	}
	for {
		n, _, errno := unix.Syscall6(unix.SYS_IO_URING_ENTER, uintptr(r.fd), uintptr(r.pending), uintptr(wait), flags, 0, 0)
		if errno == unix.EINTR {
			continue
		}
		if errno != 0 {
			return fmt.Errorf("io_uring_enter: %w", errno)
		}
		r.pending -= min(uint32(n), r.pending)
		return nil
	}
}

// next takes the next completion, if there is one.
func (r *ring) next() (cqe, bool) {
	head := atomic.LoadUint32(r.cqHead)
	if head == atomic.LoadUint32(r.cqTail) {
		return cqe{}, false
	}
	c := r.cqes[head&r.cqMask]
	atomic.StoreUint32(r.cqHead, head+1)
	return c, true
}

// uringProbe sets up and closes a ring as the forwarder would: nil when
// this kernel lets the process use io_uring.
func uringProbe() error {
	r, err := newRing(8, ioringSetupSingleIssuer|ioringSetupDeferTaskrun)
	if err == nil {
		r.close()
	}
	return err
}
