package protocol

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strings"
)

// Startup-phase request codes (the int32 after the length of an untyped packet).
const (
	ProtocolVersion3  = 196608 // 3.0
	SSLRequestCode    = 80877103
	GSSENCRequestCode = 80877104
	CancelRequestCode = 80877102
)

// MaxStartupPacketLength is PostgreSQL's MAX_STARTUP_PACKET_LENGTH, used by ReadStartup
// when maxLen is 0.
const MaxStartupPacketLength = 10000

// ReadStartup reads one untyped startup-phase packet (int32 length + payload) and returns
// the payload after the length. maxLen limits the whole packet including the length word
// (MaxStartupPacketLength if 0) and is checked before allocating. Allocates (startup is
// not the hot path).
func ReadStartup(r io.Reader, maxLen int) ([]byte, error) {
	if maxLen <= 0 {
		maxLen = MaxStartupPacketLength
	}
	var lenBuf [4]byte
	if _, err := io.ReadFull(r, lenBuf[:]); err != nil {
		return nil, fmt.Errorf("read startup packet length: %w", err)
	}
	length, err := startupLength(lenBuf[:], maxLen)
	if err != nil {
		return nil, err
	}
	payload := make([]byte, length-4)
	if _, err := io.ReadFull(r, payload); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, fmt.Errorf("read startup packet: %w", err)
	}
	return payload, nil
}

// NextStartup is ReadStartup through r's buffer: the packet and whatever
// the client sent along with it (the next packet, its first login message)
// take one read of the socket, and what was read along stays buffered for
// the next call on r. The payload is valid until then. maxLen is ReadStartup's;
// r's own limit does not apply, its buffer grows to the packet if needed.
func (r *Reader) NextStartup(maxLen int) ([]byte, error) {
	if r.broken != nil {
		return nil, r.broken
	}
	if maxLen <= 0 {
		maxLen = MaxStartupPacketLength
	}
	r.acquire(r.bufSize)
	if err := r.fill(4); err != nil {
		return nil, fmt.Errorf("read startup packet length: %w", err)
	}
	length, err := startupLength(r.buf[r.r:r.r+4], maxLen)
	if err != nil {
		return nil, err
	}
	if err := r.fill(length); err != nil {
		return nil, fmt.Errorf("read startup packet: %w", err)
	}
	return r.take(length)[4:], nil
}

// startupLength validates a startup packet's length word (the whole packet,
// the word included): at least the word and a request code, at most maxLen.
func startupLength(b []byte, maxLen int) (int, error) {
	length := binary.BigEndian.Uint32(b)
	switch {
	case length < 8: // length word plus a request code
		return 0, fmt.Errorf("%w: startup packet declares length %d", ErrInvalidLength, length)
	case uint64(length) > uint64(maxLen):
		return 0, &MessageTooLargeError{Length: int(length), Max: maxLen}
	}
	return int(length), nil
}

// DecodeStartup classifies a startup payload (as returned by ReadStartup) and returns
// *StartupMessage, *SSLRequest, *GSSENCRequest or *CancelRequest. A protocol major version
// other than 3 is an *UnsupportedProtocolError; a StartupMessage without "user" is ErrNoUser.
func DecodeStartup(payload []byte) (any, error) {
	r := bodyReader{b: payload}
	code := r.uint32()
	if r.err != nil {
		return nil, fmt.Errorf("decode startup packet: %w", r.err)
	}
	var msg interface{ decode(*bodyReader) error }
	switch code {
	case SSLRequestCode:
		msg = &SSLRequest{}
	case GSSENCRequestCode:
		msg = &GSSENCRequest{}
	case CancelRequestCode:
		msg = &CancelRequest{}
	default:
		if major := code >> 16; major != 3 {
			return nil, &UnsupportedProtocolError{Major: uint16(major), Minor: uint16(code)}
		}
		msg = &StartupMessage{ProtocolVersion: code}
	}
	if err := msg.decode(&r); err != nil {
		return nil, fmt.Errorf("decode startup packet: %w", err)
	}
	return msg, nil
}

// StartupMessage opens a session. Order lists the parameter names in wire order, so the
// message can be re-encoded (or forwarded) faithfully.
type StartupMessage struct {
	ProtocolVersion uint32
	Parameters      map[string]string
	Order           []string
}

// decode reads the parameters after the protocol version: NUL-terminated name/value pairs
// ending with an empty name. Duplicate names are rejected so that no two readers of the
// same packet can disagree about, say, the user.
func (m *StartupMessage) decode(r *bodyReader) error {
	m.Parameters = map[string]string{}
	m.Order = nil
	for {
		name := r.cstring()
		if r.err != nil {
			return r.err
		}
		if name == "" {
			break
		}
		value := r.cstring()
		if _, dup := m.Parameters[name]; dup {
			return malformed("duplicate startup parameter %q", name)
		}
		m.Parameters[name] = value
		m.Order = append(m.Order, name)
	}
	if err := r.end(); err != nil {
		return err
	}
	if m.Parameters["user"] == "" {
		return ErrNoUser
	}
	return nil
}

// Encode appends the whole packet, length included. Parameters listed in Order come first
// in that order; parameters missing from Order follow in no particular order.
func (m StartupMessage) Encode(dst []byte) []byte {
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	dst = binary.BigEndian.AppendUint32(dst, m.ProtocolVersion)
	seen := make(map[string]bool, len(m.Order))
	for _, name := range m.Order {
		if v, ok := m.Parameters[name]; ok && !seen[name] {
			seen[name] = true
			dst = appendCString(appendCString(dst, name), v)
		}
	}
	for name, v := range m.Parameters {
		if !seen[name] {
			dst = appendCString(appendCString(dst, name), v)
		}
	}
	dst = append(dst, 0)
	binary.BigEndian.PutUint32(dst[start:], uint32(len(dst)-start))
	return dst
}

// ProtocolOptionPrefix starts the name of a protocol option in a StartupMessage
// ("_pq_.<name>"): a request to change the protocol, not a run-time parameter.
const ProtocolOptionPrefix = "_pq_."

// ProtocolNegotiation returns the NegotiateProtocolVersion a 3.0 server without protocol
// options answers m with, and whether one is due: when m asks for a 3.x minor version
// above 0 or carries protocol options (all unsupported, listed in wire order). This is
// what PostgreSQL 15's ProcessStartupPacket does; like it, NewestMinor carries the whole
// newest version word (3.0 = ProtocolVersion3), which clients read as minor 0 of major 3.
// The login then continues with protocol 3.0.
func (m *StartupMessage) ProtocolNegotiation() (NegotiateProtocolVersion, bool) {
	var opts []string
	for _, name := range m.Order {
		if strings.HasPrefix(name, ProtocolOptionPrefix) {
			opts = append(opts, name)
		}
	}
	if m.ProtocolVersion&0xffff == 0 && len(opts) == 0 {
		return NegotiateProtocolVersion{}, false
	}
	return NegotiateProtocolVersion{NewestMinor: ProtocolVersion3, UnsupportedOptions: opts}, true
}

// CancelRequest asks the server to cancel the query running on the backend identified by
// ProcessID and SecretKey (from BackendKeyData).
type CancelRequest struct {
	ProcessID uint32
	SecretKey uint32
}

func (m *CancelRequest) decode(r *bodyReader) error {
	m.ProcessID = r.uint32()
	m.SecretKey = r.uint32()
	return r.end()
}

// Encode appends the whole 16-byte packet.
func (m CancelRequest) Encode(dst []byte) []byte {
	dst = binary.BigEndian.AppendUint32(dst, 16)
	dst = binary.BigEndian.AppendUint32(dst, CancelRequestCode)
	dst = binary.BigEndian.AppendUint32(dst, m.ProcessID)
	return binary.BigEndian.AppendUint32(dst, m.SecretKey)
}

// SSLRequest asks to switch to TLS; the answer is a single byte 'S' or 'N'.
type SSLRequest struct{}

func (*SSLRequest) decode(r *bodyReader) error { return r.end() }

// Encode appends the whole 8-byte packet.
func (SSLRequest) Encode(dst []byte) []byte {
	return binary.BigEndian.AppendUint32(append(dst, 0, 0, 0, 8), SSLRequestCode)
}

// GSSENCRequest asks for GSSAPI encryption; the answer is a single byte 'G' or 'N'.
type GSSENCRequest struct{}

func (*GSSENCRequest) decode(r *bodyReader) error { return r.end() }

// Encode appends the whole 8-byte packet.
func (GSSENCRequest) Encode(dst []byte) []byte {
	return binary.BigEndian.AppendUint32(append(dst, 0, 0, 0, 8), GSSENCRequestCode)
}
