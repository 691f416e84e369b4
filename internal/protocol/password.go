package protocol

import "encoding/binary"

// The three 'p' messages share a type byte: which one a body holds depends on the
// authentication request the server sent last.

// PasswordMessage answers AuthenticationCleartextPassword or AuthenticationMD5Password.
type PasswordMessage struct {
	Password string
}

// Decode decodes a PasswordMessage body.
func (m *PasswordMessage) Decode(body []byte) error {
	r := bodyReader{b: body}
	m.Password = r.cstring()
	return decodeErr("PasswordMessage", r.end())
}

// Encode appends the whole frame.
func (m PasswordMessage) Encode(dst []byte) []byte {
	dst, start := beginFrame(dst, MsgPassword)
	return finishFrame(appendCString(dst, m.Password), start)
}

// SASLInitialResponse selects a SASL mechanism and carries the client-first message.
// Data is nil when the client sent no initial response (length -1); it aliases the body.
type SASLInitialResponse struct {
	Mechanism string
	Data      []byte
}

// Decode decodes a SASLInitialResponse body.
func (m *SASLInitialResponse) Decode(body []byte) error {
	r := bodyReader{b: body}
	m.Mechanism = r.cstring()
	m.Data = nil
	switch n := r.int32(); {
	case n == -1:
	case n < -1:
		r.err = malformed("negative SASL data length %d", n)
	default:
		m.Data = r.bytes(int(n))
	}
	return decodeErr("SASLInitialResponse", r.end())
}

// Encode appends the whole frame.
func (m SASLInitialResponse) Encode(dst []byte) []byte {
	dst, start := beginFrame(dst, MsgPassword)
	dst = appendCString(dst, m.Mechanism)
	if m.Data == nil {
		dst = binary.BigEndian.AppendUint32(dst, 0xFFFFFFFF)
	} else {
		dst = append(binary.BigEndian.AppendUint32(dst, uint32(len(m.Data))), m.Data...)
	}
	return finishFrame(dst, start)
}

// SASLResponse carries a later client SASL message. Data aliases the body.
type SASLResponse struct {
	Data []byte
}

// Decode decodes a SASLResponse body.
func (m *SASLResponse) Decode(body []byte) error {
	m.Data = body[:len(body):len(body)]
	return nil
}

// Encode appends the whole frame.
func (m SASLResponse) Encode(dst []byte) []byte {
	dst, start := beginFrame(dst, MsgPassword)
	return finishFrame(append(dst, m.Data...), start)
}
