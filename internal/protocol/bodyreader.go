package protocol

import (
	"bytes"
	"encoding/binary"
)

// bodyReader reads big-endian fields from an untrusted message body. The first failure is
// sticky: later reads return zero values, so decoders check err once at the end.
type bodyReader struct {
	b   []byte
	err error
}

func (r *bodyReader) need(n int) bool {
	if r.err != nil {
		return false
	}
	if n < 0 || len(r.b) < n {
		r.err = malformed("need %d bytes, have %d", n, len(r.b))
		return false
	}
	return true
}

func (r *bodyReader) byte() byte {
	if !r.need(1) {
		return 0
	}
	v := r.b[0]
	r.b = r.b[1:]
	return v
}

func (r *bodyReader) uint16() uint16 {
	if !r.need(2) {
		return 0
	}
	v := binary.BigEndian.Uint16(r.b)
	r.b = r.b[2:]
	return v
}

func (r *bodyReader) int16() int16 { return int16(r.uint16()) }

func (r *bodyReader) uint32() uint32 {
	if !r.need(4) {
		return 0
	}
	v := binary.BigEndian.Uint32(r.b)
	r.b = r.b[4:]
	return v
}

func (r *bodyReader) int32() int32 { return int32(r.uint32()) }

// cbytes reads a NUL-terminated string and returns it without the NUL, aliasing the body.
func (r *bodyReader) cbytes() []byte {
	if r.err != nil {
		return nil
	}
	i := bytes.IndexByte(r.b, 0)
	if i < 0 {
		r.err = malformed("unterminated string")
		return nil
	}
	v := r.b[:i:i]
	r.b = r.b[i+1:]
	return v
}

func (r *bodyReader) cstring() string { return string(r.cbytes()) }

// bytes returns the next n bytes, aliasing the body (capacity clipped so appends copy).
func (r *bodyReader) bytes(n int) []byte {
	if !r.need(n) {
		return nil
	}
	v := r.b[:n:n]
	r.b = r.b[n:]
	return v
}

// rest returns all remaining bytes, aliasing the body.
func (r *bodyReader) rest() []byte {
	if r.err != nil {
		return nil
	}
	v := r.b[:len(r.b):len(r.b)]
	r.b = r.b[len(r.b):]
	return v
}

// count reads a uint16 element count and checks that count*minSize bytes remain, so a
// hostile count cannot make the caller allocate more than the body could describe.
func (r *bodyReader) count(minSize int) int {
	n := int(r.uint16())
	if !r.need(n * minSize) {
		return 0
	}
	return n
}

// int16s reads a uint16 count followed by that many int16 values; nil when the count is 0.
func (r *bodyReader) int16s() []int16 {
	n := r.count(2)
	if n == 0 {
		return nil
	}
	v := make([]int16, n)
	for i := range v {
		v[i] = r.int16()
	}
	return v
}

// uint32s reads a uint16 count followed by that many uint32 values; nil when the count is 0.
func (r *bodyReader) uint32s() []uint32 {
	n := r.count(4)
	if n == 0 {
		return nil
	}
	v := make([]uint32, n)
	for i := range v {
		v[i] = r.uint32()
	}
	return v
}

// values reads a uint16 count followed by (int32 length, bytes) pairs; length -1 is a nil
// (SQL NULL) value. Values alias the body.
func (r *bodyReader) values() [][]byte {
	n := r.count(4)
	if n == 0 {
		return nil
	}
	v := make([][]byte, n)
	for i := range v {
		l := r.int32()
		switch {
		case l == -1:
		case l < -1:
			r.err = malformed("negative value length %d", l)
		default:
			v[i] = r.bytes(int(l))
		}
		if r.err != nil {
			return nil
		}
	}
	return v
}

// end returns the sticky error, or a malformed error if bytes are left over.
func (r *bodyReader) end() error {
	if r.err == nil && len(r.b) != 0 {
		r.err = malformed("%d unexpected trailing bytes", len(r.b))
	}
	return r.err
}

// Encoding helpers. Strings must not contain NUL; lengths are not checked against the
// int32 range (callers never build gigabyte messages).

// beginFrame appends a type byte and a length placeholder; finishFrame fills the length.
func beginFrame(dst []byte, typ byte) ([]byte, int) {
	return append(dst, typ, 0, 0, 0, 0), len(dst)
}

func finishFrame(dst []byte, start int) []byte {
	binary.BigEndian.PutUint32(dst[start+1:], uint32(len(dst)-start-1))
	return dst
}

func appendCString(dst []byte, s string) []byte {
	return append(append(dst, s...), 0)
}

func appendInt16s(dst []byte, v []int16) []byte {
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(v)))
	for _, x := range v {
		dst = binary.BigEndian.AppendUint16(dst, uint16(x))
	}
	return dst
}

func appendUint32s(dst []byte, v []uint32) []byte {
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(v)))
	for _, x := range v {
		dst = binary.BigEndian.AppendUint32(dst, x)
	}
	return dst
}

func appendValues(dst []byte, v [][]byte) []byte {
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(v)))
	for _, x := range v {
		if x == nil {
			dst = binary.BigEndian.AppendUint32(dst, 0xFFFFFFFF)
			continue
		}
		dst = binary.BigEndian.AppendUint32(dst, uint32(len(x)))
		dst = append(dst, x...)
	}
	return dst
}
