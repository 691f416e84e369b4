package protocol

// Bind creates a portal from a prepared statement ('B'). A nil element of Params is SQL
// NULL; after Decode the elements alias the body.
type Bind struct {
	Portal        string
	Statement     string
	ParamFormats  []int16
	Params        [][]byte
	ResultFormats []int16
}

// Decode decodes a Bind body. Declared counts are checked against the remaining bytes
// before the slices are allocated.
func (m *Bind) Decode(body []byte) error {
	r := bodyReader{b: body}
	m.Portal = r.cstring()
	m.Statement = r.cstring()
	m.ParamFormats = r.int16s()
	m.Params = r.values()
	m.ResultFormats = r.int16s()
	return decodeErr("Bind", r.end())
}

// Encode appends the whole frame.
func (m Bind) Encode(dst []byte) []byte {
	dst, start := beginFrame(dst, MsgBind)
	dst = appendCString(dst, m.Portal)
	dst = appendCString(dst, m.Statement)
	dst = appendInt16s(dst, m.ParamFormats)
	dst = appendValues(dst, m.Params)
	dst = appendInt16s(dst, m.ResultFormats)
	return finishFrame(dst, start)
}
