package admin

import (
	"strconv"
	"time"

	"github.com/doorman-go/doorman/internal/protocol"
)

// Type OIDs and sizes of the columns the console sends, as PgBouncer's
// pktbuf.c: 's' text, 'i' int4, 'q' int8 ('T' timestamps go out as text).
const (
	oidText = 25
	oidInt4 = 23
	oidInt8 = 20
	// oidNumeric carries values with a fraction (milliseconds); PgBouncer
	// sends none, the Rust pg_doorman does.
	oidNumeric = 1700
)

// column is one result column.
type column struct {
	Name string
	OID  uint32
}

func textCol(name string) column    { return column{Name: name, OID: oidText} }
func int4Col(name string) column    { return column{Name: name, OID: oidInt4} }
func int8Col(name string) column    { return column{Name: name, OID: oidInt8} }
func numericCol(name string) column { return column{Name: name, OID: oidNumeric} }

// cell is one value in text format; nil is SQL NULL.
type cell []byte

func text(s string) cell { return append(cell{}, s...) }
func i4(n int) cell      { return strconv.AppendInt(cell{}, int64(n), 10) }
func u8(n uint64) cell   { return strconv.AppendUint(cell{}, n, 10) }
func flag(b bool) cell   { return i4(boolInt(b)) }
func i8(n int64) cell    { return strconv.AppendInt(cell{}, n, 10) }

// millis renders d in milliseconds with microsecond precision.
func millis(d time.Duration) cell {
	return strconv.AppendFloat(cell{}, float64(d.Microseconds())/1e3, 'f', 3, 64)
}
func seconds(d time.Duration) int { return int(d / time.Second) }

// timestamp renders t as PgBouncer's format_time_s does; zero is NULL.
func timestamp(t time.Time) cell {
	if t.IsZero() {
		return nil
	}
	return text(t.Format("2006-01-02 15:04:05 MST"))
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// resultSet is a complete SHOW answer.
type resultSet struct {
	Columns []column
	Rows    [][]cell
}

// encode appends RowDescription, the DataRows and CommandComplete "SHOW".
func (r *resultSet) encode(dst []byte) []byte {
	fields := make([]protocol.FieldDescription, len(r.Columns))
	for i, c := range r.Columns {
		size := int16(-1)
		switch c.OID {
		case oidInt4:
			size = 4
		case oidInt8:
			size = 8
		}
		fields[i] = protocol.FieldDescription{Name: c.Name, TypeOID: c.OID, TypeSize: size, TypeModifier: -1}
	}
	dst = protocol.RowDescription{Fields: fields}.Encode(dst)
	values := make([][]byte, len(r.Columns))
	for _, row := range r.Rows {
		if len(row) != len(r.Columns) {
			panic("BUG: admin: row has " + strconv.Itoa(len(row)) + " values for " + strconv.Itoa(len(r.Columns)) + " columns")
		}
		for i, v := range row {
			values[i] = v
		}
		dst = protocol.DataRow{Values: values}.Encode(dst)
	}
	return protocol.CommandComplete{Tag: "SHOW"}.Encode(dst)
}

// names lists the column names (tests, docs).
func (r *resultSet) names() []string {
	out := make([]string, len(r.Columns))
	for i, c := range r.Columns {
		out[i] = c.Name
	}
	return out
}

// appendError appends an ErrorResponse with severity ERROR.
func appendError(dst []byte, code, msg string) []byte {
	return protocol.AppendError(dst, "ERROR", code, msg)
}

// appendNotice appends a NoticeResponse.
func appendNotice(dst []byte, msg, detail string) []byte {
	return protocol.Notice{
		Severity: "NOTICE", SeverityUnlocalized: "NOTICE", Code: "00000",
		Message: msg, Detail: detail,
	}.EncodeNotice(dst)
}

// appendTag appends CommandComplete.
func appendTag(dst []byte, tag string) []byte {
	return protocol.CommandComplete{Tag: tag}.Encode(dst)
}
