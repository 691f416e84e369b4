package protocol

import (
	"slices"
)

// Notice is the body of ErrorResponse ('E') and NoticeResponse ('N'). Empty fields are
// omitted when encoding. Unknown holds field codes this package does not name.
type Notice struct {
	Severity            string // S, localized
	SeverityUnlocalized string // V
	Code                string // C, SQLSTATE
	Message             string // M
	Detail              string // D
	Hint                string // H
	Position            string // P
	InternalPosition    string // p
	InternalQuery       string // q
	Where               string // W
	SchemaName          string // s
	TableName           string // t
	ColumnName          string // c
	DataTypeName        string // d
	ConstraintName      string // n
	File                string // F
	Line                string // L
	Routine             string // R
	Unknown             map[byte]string
}

// field maps a field code to its struct field; nil for unknown codes.
func (m *Notice) field(code byte) *string {
	switch code {
	case 'S':
		return &m.Severity
	case 'V':
		return &m.SeverityUnlocalized
	case 'C':
		return &m.Code
	case 'M':
		return &m.Message
	case 'D':
		return &m.Detail
	case 'H':
		return &m.Hint
	case 'P':
		return &m.Position
	case 'p':
		return &m.InternalPosition
	case 'q':
		return &m.InternalQuery
	case 'W':
		return &m.Where
	case 's':
		return &m.SchemaName
	case 't':
		return &m.TableName
	case 'c':
		return &m.ColumnName
	case 'd':
		return &m.DataTypeName
	case 'n':
		return &m.ConstraintName
	case 'F':
		return &m.File
	case 'L':
		return &m.Line
	case 'R':
		return &m.Routine
	}
	return nil
}

// knownNoticeFields is the encoding order, PostgreSQL's own.
const knownNoticeFields = "SVCMDHPpqWstcdnFLR"

// Decode decodes an ErrorResponse or NoticeResponse body: (code byte, string) pairs ended
// by a zero byte. A repeated code keeps the last value.
func (m *Notice) Decode(body []byte) error {
	*m = Notice{}
	r := bodyReader{b: body}
	for r.err == nil {
		code := r.byte()
		if code == 0 {
			break
		}
		value := r.cstring()
		if f := m.field(code); f != nil {
			*f = value
			continue
		}
		if m.Unknown == nil {
			m.Unknown = map[byte]string{}
		}
		m.Unknown[code] = value
	}
	return decodeErr("Notice", r.end())
}

// EncodeError appends the whole ErrorResponse frame.
func (m Notice) EncodeError(dst []byte) []byte { return m.encode(dst, MsgErrorResponse) }

// EncodeNotice appends the whole NoticeResponse frame.
func (m Notice) EncodeNotice(dst []byte) []byte { return m.encode(dst, MsgNoticeResponse) }

func (m Notice) encode(dst []byte, typ byte) []byte {
	dst, start := beginFrame(dst, typ)
	for i := 0; i < len(knownNoticeFields); i++ {
		code := knownNoticeFields[i]
		if v := *m.field(code); v != "" {
			dst = appendCString(append(dst, code), v)
		}
	}
	// Sorted so that the encoding is deterministic.
	codes := make([]byte, 0, len(m.Unknown))
	for code := range m.Unknown {
		if code != 0 && m.field(code) == nil {
			codes = append(codes, code)
		}
	}
	slices.Sort(codes)
	for _, code := range codes {
		dst = appendCString(append(dst, code), m.Unknown[code])
	}
	return finishFrame(append(dst, 0), start)
}

// AppendError appends an ErrorResponse with the given severity (e.g. "FATAL"), SQLSTATE
// code and message, setting both the localized and the unlocalized severity.
func AppendError(dst []byte, severity, code, message string) []byte {
	return Notice{Severity: severity, SeverityUnlocalized: severity, Code: code, Message: message}.EncodeError(dst)
}
