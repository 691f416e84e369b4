package protocol

// Query is a simple-protocol query ('Q'): one string that may hold several statements.
type Query struct {
	String string
}

// Decode decodes a Query body.
func (m *Query) Decode(body []byte) error {
	r := bodyReader{b: body}
	m.String = r.cstring()
	return decodeErr("Query", r.end())
}

// Encode appends the whole frame.
func (m Query) Encode(dst []byte) []byte {
	dst, start := beginFrame(dst, MsgQuery)
	dst = appendCString(dst, m.String)
	return finishFrame(dst, start)
}

// Parse prepares a statement ('P'). An empty Name is the unnamed statement.
type Parse struct {
	Name      string
	Query     string
	ParamOIDs []uint32
}

// Decode decodes a Parse body.
func (m *Parse) Decode(body []byte) error {
	r := bodyReader{b: body}
	m.Name = r.cstring()
	m.Query = r.cstring()
	m.ParamOIDs = r.uint32s()
	return decodeErr("Parse", r.end())
}

// Encode appends the whole frame.
func (m Parse) Encode(dst []byte) []byte {
	dst, start := beginFrame(dst, MsgParse)
	dst = appendCString(dst, m.Name)
	dst = appendCString(dst, m.Query)
	dst = appendUint32s(dst, m.ParamOIDs)
	return finishFrame(dst, start)
}
