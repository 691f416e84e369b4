package procnet

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// TCP states as the kernel numbers them (include/net/tcp_states.h); the
// index into TCPCounts.
const (
	TCPEstablished = iota + 1
	TCPSynSent
	TCPSynRecv
	TCPFinWait1
	TCPFinWait2
	TCPTimeWait
	TCPClose
	TCPCloseWait
	TCPLastAck
	TCPListen
	TCPClosing
	TCPNewSynRecv
	TCPBoundInactive
	tcpMaxState = TCPBoundInactive
)

// TCPStateNames are the column suffixes of SHOW SOCKETS, by state number
// ("" for 0, which the kernel does not use).
var TCPStateNames = [tcpMaxState + 1]string{
	"", "established", "syn_sent", "syn_recv", "fin_wait1", "fin_wait2", "time_wait",
	"close", "close_wait", "last_ack", "listen", "closing", "new_syn_recv", "bound_inactive",
}

// TCPCounts counts TCP sockets by state; index 0 holds rows with a state
// the kernel did not have when this was written.
type TCPCounts [tcpMaxState + 1]int

// Total is the number of sockets counted.
func (c *TCPCounts) Total() int {
	n := 0
	for _, v := range c {
		n += v
	}
	return n
}

// UnixCounts counts unix sockets: stream sockets by state (socket_state
// in include/uapi/linux/net.h), datagram and seqpacket ones by type.
type UnixCounts struct {
	Free, Unconnected, Connecting, Connected, Disconnecting int
	Dgram, SeqPacket                                        int
	Other                                                   int // another type or state
}

// Total is the number of sockets counted.
func (c *UnixCounts) Total() int {
	return c.Free + c.Unconnected + c.Connecting + c.Connected + c.Disconnecting + c.Dgram + c.SeqPacket + c.Other
}

// Counts are the sockets of one process.
type Counts struct {
	TCP, TCP6 TCPCounts
	Unix      UnixCounts
	// Unknown are sockets of the process found in none of the tables.
	Unknown int
}

// Limits on what a parser reads: a /proc/net line is about 150 bytes (a
// unix socket path at most 108 more), and a table of millions of rows
// means something is wrong.
const (
	MaxLine  = 4096
	MaxLines = 1 << 22
)

// ErrLineTooLong and ErrTooManyLines are returned when input passes the
// limits above.
var (
	ErrLineTooLong  = errors.New("procnet: line too long")
	ErrTooManyLines = errors.New("procnet: too many lines")
	// ErrUnsupported is returned by Read off Linux.
	ErrUnsupported = errors.New("procnet: socket states are only available on Linux")
)

// Owned reports whether a socket inode belongs to the process; nil means
// count every row.
type Owned func(inode uint64) bool

// ParseTCP counts the rows of a /proc/net/tcp or tcp6 table (header line
// first) whose inode owned accepts, and reports each counted inode to seen
// if it is not nil.
func ParseTCP(r io.Reader, owned Owned, seen func(uint64)) (TCPCounts, error) {
	var c TCPCounts
	err := eachRow(r, func(f [][]byte) {
		// sl local rem st tx:rx tr:when retrnsmt uid timeout inode ...
		if len(f) < 10 {
			return
		}
		st, err := strconv.ParseUint(string(f[3]), 16, 8)
		if err != nil {
			return
		}
		inode, ok := keep(f[9], owned)
		if !ok {
			return
		}
		if st > tcpMaxState {
			st = 0
		}
		c[st]++
		if seen != nil {
			seen(inode)
		}
	})
	return c, err
}

// Unix socket types and states as /proc/net/unix shows them.
const (
	unixStream    = 1
	unixDgram     = 2
	unixSeqPacket = 5
)

// ParseUnix counts the rows of /proc/net/unix (header line first) whose
// inode owned accepts, and reports each counted inode to seen if it is
// not nil.
func ParseUnix(r io.Reader, owned Owned, seen func(uint64)) (UnixCounts, error) {
	var c UnixCounts
	err := eachRow(r, func(f [][]byte) {
		// Num: RefCount Protocol Flags Type St Inode [Path]
		if len(f) < 7 {
			return
		}
		typ, err1 := strconv.ParseUint(string(f[4]), 16, 16)
		st, err2 := strconv.ParseUint(string(f[5]), 16, 8)
		if err1 != nil || err2 != nil {
			return
		}
		inode, ok := keep(f[6], owned)
		if !ok {
			return
		}
		countUnix(&c, typ, st)
		if seen != nil {
			seen(inode)
		}
	})
	return c, err
}

func countUnix(c *UnixCounts, typ, st uint64) {
	switch {
	case typ == unixDgram:
		c.Dgram++
	case typ == unixSeqPacket:
		c.SeqPacket++
	case typ != unixStream:
		c.Other++
	case st == 0:
		c.Free++
	case st == 1:
		c.Unconnected++
	case st == 2:
		c.Connecting++
	case st == 3:
		c.Connected++
	case st == 4:
		c.Disconnecting++
	default:
		c.Other++
	}
}

// keep parses an inode field and applies owned.
func keep(field []byte, owned Owned) (uint64, bool) {
	inode, err := strconv.ParseUint(string(field), 10, 64)
	if err != nil {
		return 0, false
	}
	return inode, owned == nil || owned(inode)
}

// eachRow calls row with the fields of every line after the first, within
// MaxLine and MaxLines. The fields alias the reader's buffer: valid only
// during the call.
func eachRow(r io.Reader, row func(fields [][]byte)) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 512), MaxLine)
	var fields [][]byte
	for n := 0; sc.Scan(); n++ {
		if n == 0 {
			continue // header
		}
		if n > MaxLines {
			return ErrTooManyLines
		}
		fields = appendFields(fields[:0], sc.Bytes())
		row(fields)
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return ErrLineTooLong
		}
		return fmt.Errorf("procnet: read: %w", err)
	}
	return nil
}

// appendFields splits line on spaces and tabs without allocating strings.
func appendFields(dst [][]byte, line []byte) [][]byte {
	for {
		line = bytes.TrimLeft(line, " \t")
		if len(line) == 0 {
			return dst
		}
		i := bytes.IndexAny(line, " \t")
		if i < 0 {
			return append(dst, line)
		}
		dst = append(dst, line[:i])
		line = line[i:]
	}
}

// socketInode parses a "socket:[12345]" link target.
func socketInode(link string) (uint64, bool) {
	s, ok := strings.CutPrefix(link, "socket:[")
	if !ok {
		return 0, false
	}
	s, ok = strings.CutSuffix(s, "]")
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseUint(s, 10, 64)
	return n, err == nil
}
