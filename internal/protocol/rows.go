package protocol

import "encoding/binary"

// FieldDescription describes one result column of a RowDescription.
type FieldDescription struct {
	Name         string
	TableOID     uint32
	ColumnAttr   int16
	TypeOID      uint32
	TypeSize     int16
	TypeModifier int32
	Format       int16
}

// fieldDescriptionMinLen is a field with an empty name: NUL + 18 bytes of attributes.
const fieldDescriptionMinLen = 19

// RowDescription describes the columns of the rows that follow ('T').
type RowDescription struct {
	Fields []FieldDescription
}

// Decode decodes a RowDescription body.
func (m *RowDescription) Decode(body []byte) error {
	r := bodyReader{b: body}
	m.Fields = nil
	if n := r.count(fieldDescriptionMinLen); n > 0 {
		m.Fields = make([]FieldDescription, n)
		for i := range m.Fields {
			f := &m.Fields[i]
			f.Name = r.cstring()
			f.TableOID = r.uint32()
			f.ColumnAttr = r.int16()
			f.TypeOID = r.uint32()
			f.TypeSize = r.int16()
			f.TypeModifier = r.int32()
			f.Format = r.int16()
		}
	}
	return decodeErr("RowDescription", r.end())
}

// Encode appends the whole frame.
func (m RowDescription) Encode(dst []byte) []byte {
	dst, start := beginFrame(dst, MsgRowDescription)
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(m.Fields)))
	for _, f := range m.Fields {
		dst = appendCString(dst, f.Name)
		dst = binary.BigEndian.AppendUint32(dst, f.TableOID)
		dst = binary.BigEndian.AppendUint16(dst, uint16(f.ColumnAttr))
		dst = binary.BigEndian.AppendUint32(dst, f.TypeOID)
		dst = binary.BigEndian.AppendUint16(dst, uint16(f.TypeSize))
		dst = binary.BigEndian.AppendUint32(dst, uint32(f.TypeModifier))
		dst = binary.BigEndian.AppendUint16(dst, uint16(f.Format))
	}
	return finishFrame(dst, start)
}

// DataRow is one result row ('D'). A nil value is SQL NULL; after Decode values alias the body.
type DataRow struct {
	Values [][]byte
}

// Decode decodes a DataRow body.
func (m *DataRow) Decode(body []byte) error {
	r := bodyReader{b: body}
	m.Values = r.values()
	return decodeErr("DataRow", r.end())
}

// Encode appends the whole frame.
func (m DataRow) Encode(dst []byte) []byte {
	dst, start := beginFrame(dst, MsgDataRow)
	return finishFrame(appendValues(dst, m.Values), start)
}

// ParameterDescription lists the parameter type OIDs of a statement ('t').
type ParameterDescription struct {
	ParamOIDs []uint32
}

// Decode decodes a ParameterDescription body.
func (m *ParameterDescription) Decode(body []byte) error {
	r := bodyReader{b: body}
	m.ParamOIDs = r.uint32s()
	return decodeErr("ParameterDescription", r.end())
}

// Encode appends the whole frame.
func (m ParameterDescription) Encode(dst []byte) []byte {
	dst, start := beginFrame(dst, MsgParameterDescription)
	dst = appendUint32s(dst, m.ParamOIDs)
	return finishFrame(dst, start)
}
