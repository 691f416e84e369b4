package protocol

import "encoding/binary"

// FunctionCall is the legacy fast-path function call ('F'). Decoded only to validate it
// before forwarding; Args alias the body and a nil element is SQL NULL.
type FunctionCall struct {
	Function     uint32 // OID
	ArgFormats   []int16
	Args         [][]byte
	ResultFormat int16
}

// Decode decodes a FunctionCall body.
func (m *FunctionCall) Decode(body []byte) error {
	r := bodyReader{b: body}
	m.Function = r.uint32()
	m.ArgFormats = r.int16s()
	m.Args = r.values()
	m.ResultFormat = r.int16()
	return decodeErr("FunctionCall", r.end())
}

// Encode appends the whole frame.
func (m FunctionCall) Encode(dst []byte) []byte {
	dst, start := beginFrame(dst, MsgFunctionCall)
	dst = binary.BigEndian.AppendUint32(dst, m.Function)
	dst = appendInt16s(dst, m.ArgFormats)
	dst = appendValues(dst, m.Args)
	dst = binary.BigEndian.AppendUint16(dst, uint16(m.ResultFormat))
	return finishFrame(dst, start)
}
