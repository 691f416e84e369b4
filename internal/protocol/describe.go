package protocol

import "encoding/binary"

// Describe asks for the description of a statement or portal ('D').
type Describe struct {
	ObjectType byte // ObjectStatement or ObjectPortal
	Name       string
}

// Decode decodes a Describe body.
func (m *Describe) Decode(body []byte) error {
	typ, name, err := ObjectName(body)
	m.ObjectType, m.Name = typ, string(name)
	return decodeErr("Describe", err)
}

// Encode appends the whole frame.
func (m Describe) Encode(dst []byte) []byte {
	return appendObject(dst, MsgDescribe, m.ObjectType, m.Name)
}

// Close closes a prepared statement or portal ('C').
type Close struct {
	ObjectType byte // ObjectStatement or ObjectPortal
	Name       string
}

// Decode decodes a Close body.
func (m *Close) Decode(body []byte) error {
	typ, name, err := ObjectName(body)
	m.ObjectType, m.Name = typ, string(name)
	return decodeErr("Close", err)
}

// Encode appends the whole frame.
func (m Close) Encode(dst []byte) []byte {
	return appendObject(dst, MsgClose, m.ObjectType, m.Name)
}

func appendObject(dst []byte, msg, objectType byte, name string) []byte {
	dst, start := beginFrame(dst, msg)
	dst = appendCString(append(dst, objectType), name)
	return finishFrame(dst, start)
}

// Execute runs a portal ('E'). MaxRows 0 means no limit.
type Execute struct {
	Portal  string
	MaxRows uint32
}

// Decode decodes an Execute body.
func (m *Execute) Decode(body []byte) error {
	r := bodyReader{b: body}
	m.Portal = r.cstring()
	m.MaxRows = r.uint32()
	return decodeErr("Execute", r.end())
}

// Encode appends the whole frame.
func (m Execute) Encode(dst []byte) []byte {
	dst, start := beginFrame(dst, MsgExecute)
	dst = appendCString(dst, m.Portal)
	dst = binary.BigEndian.AppendUint32(dst, m.MaxRows)
	return finishFrame(dst, start)
}
