package upgrade

import (
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// MaxRecord bounds one migration record: a SOCK_SEQPACKET record must fit
// the socket's send buffer whole.
const MaxRecord = 64 << 10

// ErrRecordTooLarge is returned by Send for a record over MaxRecord.
var ErrRecordTooLarge = errors.New("migration record too large")

// Channel is one end of the migration socketpair.
type Channel struct {
	c  *net.UnixConn
	mu sync.Mutex // one record at a time
}

// socketpair returns both ends of a SOCK_SEQPACKET pair as files.
func socketpair() (*os.File, *os.File, error) {
	fds, err := seqpacketPair()
	if err != nil {
		return nil, nil, fmt.Errorf("socketpair: %w", err)
	}
	for _, fd := range fds {
		_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_SNDBUF, 4*MaxRecord)
		_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF, 4*MaxRecord)
	}
	return os.NewFile(uintptr(fds[0]), "migration-old"), os.NewFile(uintptr(fds[1]), "migration-new"), nil
}

// newChannel wraps a socket file; f is closed (the Channel holds a dup).
func newChannel(f *os.File) (*Channel, error) {
	defer f.Close()
	nc, err := net.FileConn(f)
	if err != nil {
		return nil, fmt.Errorf("migration channel: %w", err)
	}
	uc, ok := nc.(*net.UnixConn)
	if !ok {
		_ = nc.Close()
		return nil, fmt.Errorf("migration channel: %T is not a unix socket", nc)
	}
	return &Channel{c: uc}, nil
}

// Send passes record and the descriptor of f (which stays the caller's).
func (ch *Channel) Send(record []byte, f *os.File) error {
	if len(record) > MaxRecord {
		return fmt.Errorf("%w: %d bytes, limit %d", ErrRecordTooLarge, len(record), MaxRecord)
	}
	ch.mu.Lock()
	defer ch.mu.Unlock()
	n, oobn, err := ch.c.WriteMsgUnix(record, unix.UnixRights(int(f.Fd())), nil)
	if err != nil {
		return fmt.Errorf("send migration record: %w", err)
	}
	if n != len(record) || oobn == 0 {
		return fmt.Errorf("send migration record: short write %d/%d", n, len(record))
	}
	return nil
}

// Receive waits for the next record. It returns io.EOF-wrapped errors
// when the other end closed. A record that arrives without exactly one
// descriptor, or truncated, is an error; any descriptor that came with it
// is closed.
func (ch *Channel) Receive() ([]byte, *os.File, error) {
	buf := make([]byte, MaxRecord+1)
	oob := make([]byte, unix.CmsgSpace(4*4)) // room for a few fds, to close extras
	n, oobn, flags, _, err := ch.c.ReadMsgUnix(buf, oob)
	if err != nil {
		return nil, nil, fmt.Errorf("receive migration record: %w", err)
	}
	files, perr := parseRights(oob[:oobn])
	if n == 0 && oobn == 0 {
		return nil, nil, fmt.Errorf("receive migration record: %w", net.ErrClosed)
	}
	if perr == nil && flags&(syscall.MSG_TRUNC|syscall.MSG_CTRUNC) != 0 {
		perr = errors.New("record or descriptors truncated")
	}
	if perr == nil && len(files) != 1 {
		perr = fmt.Errorf("%d descriptors, want 1", len(files))
	}
	if perr == nil && n > MaxRecord {
		perr = fmt.Errorf("record over %d bytes", MaxRecord)
	}
	if perr != nil {
		for _, f := range files {
			_ = f.Close()
		}
		return nil, nil, fmt.Errorf("receive migration record: %w", perr)
	}
	return buf[:n], files[0], nil
}

func parseRights(oob []byte) ([]*os.File, error) {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return nil, err
	}
	var files []*os.File
	for _, m := range msgs {
		fds, err := unix.ParseUnixRights(&m)
		if err != nil {
			continue
		}
		for _, fd := range fds {
			unix.CloseOnExec(fd)
			files = append(files, os.NewFile(uintptr(fd), "migrated-client"))
		}
	}
	return files, nil
}

// Close closes this end; the other end's Receive then fails.
func (ch *Channel) Close() error { return ch.c.Close() }
