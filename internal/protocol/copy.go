package protocol

// CopyData carries COPY data in either direction ('d'). After Decode, Data aliases the body.
type CopyData struct {
	Data []byte
}

// Decode decodes a CopyData body.
func (m *CopyData) Decode(body []byte) error {
	m.Data = body[:len(body):len(body)]
	return nil
}

// Encode appends the whole frame.
func (m CopyData) Encode(dst []byte) []byte {
	dst, start := beginFrame(dst, MsgCopyData)
	return finishFrame(append(dst, m.Data...), start)
}

// CopyFail aborts COPY FROM STDIN with an error message ('f').
type CopyFail struct {
	Message string
}

// Decode decodes a CopyFail body.
func (m *CopyFail) Decode(body []byte) error {
	r := bodyReader{b: body}
	m.Message = r.cstring()
	return decodeErr("CopyFail", r.end())
}

// Encode appends the whole frame.
func (m CopyFail) Encode(dst []byte) []byte {
	dst, start := beginFrame(dst, MsgCopyFail)
	return finishFrame(appendCString(dst, m.Message), start)
}

// CopyInResponse starts COPY FROM STDIN ('G'). OverallFormat is 0 (text) or 1 (binary).
type CopyInResponse struct {
	OverallFormat byte
	ColumnFormats []int16
}

// CopyOutResponse starts COPY TO STDOUT ('H').
type CopyOutResponse struct {
	OverallFormat byte
	ColumnFormats []int16
}

// CopyBothResponse starts a bidirectional copy (streaming replication) ('W').
type CopyBothResponse struct {
	OverallFormat byte
	ColumnFormats []int16
}

// Decode decodes a CopyInResponse body.
func (m *CopyInResponse) Decode(body []byte) error {
	return decodeCopyResponse("CopyInResponse", body, &m.OverallFormat, &m.ColumnFormats)
}

// Decode decodes a CopyOutResponse body.
func (m *CopyOutResponse) Decode(body []byte) error {
	return decodeCopyResponse("CopyOutResponse", body, &m.OverallFormat, &m.ColumnFormats)
}

// Decode decodes a CopyBothResponse body.
func (m *CopyBothResponse) Decode(body []byte) error {
	return decodeCopyResponse("CopyBothResponse", body, &m.OverallFormat, &m.ColumnFormats)
}

// Encode appends the whole frame.
func (m CopyInResponse) Encode(dst []byte) []byte {
	return appendCopyResponse(dst, MsgCopyInResponse, m.OverallFormat, m.ColumnFormats)
}

// Encode appends the whole frame.
func (m CopyOutResponse) Encode(dst []byte) []byte {
	return appendCopyResponse(dst, MsgCopyOutResponse, m.OverallFormat, m.ColumnFormats)
}

// Encode appends the whole frame.
func (m CopyBothResponse) Encode(dst []byte) []byte {
	return appendCopyResponse(dst, MsgCopyBothResponse, m.OverallFormat, m.ColumnFormats)
}

func decodeCopyResponse(name string, body []byte, format *byte, columns *[]int16) error {
	r := bodyReader{b: body}
	*format = r.byte()
	*columns = r.int16s()
	if r.err == nil && *format > 1 {
		r.err = malformed("overall format %d", *format)
	}
	return decodeErr(name, r.end())
}

func appendCopyResponse(dst []byte, typ, format byte, columns []int16) []byte {
	dst, start := beginFrame(dst, typ)
	dst = appendInt16s(append(dst, format), columns)
	return finishFrame(dst, start)
}
