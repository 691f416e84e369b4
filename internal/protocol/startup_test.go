package protocol

import (
	"bytes"
	"encoding/binary"
	"io"
	"testing"
	"testing/iotest"

	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/stretchr/testify/require"
)

func TestStartupRoundTrip(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		msg  interface{ Encode([]byte) []byte }
	}{
		{"startup", &StartupMessage{ProtocolVersion: ProtocolVersion3,
			Parameters: map[string]string{"user": "alice", "database": "db", "application_name": ""},
			Order:      []string{"user", "database", "application_name"}}},
		{"startup 3.2", &StartupMessage{ProtocolVersion: 3<<16 | 2,
			Parameters: map[string]string{"user": "bob"}, Order: []string{"user"}}},
		{"ssl", &SSLRequest{}},
		{"gssenc", &GSSENCRequest{}},
		{"cancel", &CancelRequest{ProcessID: 4242, SecretKey: 0xCAFEBABE}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			packet := tc.msg.Encode(nil)
			payload, err := ReadStartup(iotest.OneByteReader(bytes.NewReader(packet)), 0)
			require.NoError(t, err)
			require.Equal(t, packet[4:], payload)
			got, err := DecodeStartup(payload)
			require.NoError(t, err)
			require.Equal(t, tc.msg, got)
		})
	}
}

func TestStartupEncodeOrder(t *testing.T) {
	t.Parallel()
	m := StartupMessage{ProtocolVersion: ProtocolVersion3,
		Parameters: map[string]string{"user": "u", "database": "d"}, Order: []string{"database", "user"}}
	want := append([]byte{0, 0, 0, 27, 0, 3, 0, 0}, "database\x00d\x00user\x00u\x00\x00"...)
	require.Equal(t, want, m.Encode(nil))

	// Parameters missing from Order are still sent.
	m.Order = nil
	got, err := DecodeStartup(m.Encode(nil)[4:])
	require.NoError(t, err)
	require.Equal(t, m.Parameters, got.(*StartupMessage).Parameters)
}

func TestDecodeStartupErrors(t *testing.T) {
	t.Parallel()
	v3 := binary.BigEndian.AppendUint32(nil, ProtocolVersion3)
	code := func(c uint32, rest ...byte) []byte { return append(binary.BigEndian.AppendUint32(nil, c), rest...) }
	tests := []struct {
		name string
		body []byte
		want error
	}{
		{"empty", nil, ErrMalformed},
		{"no user", append(bytes.Clone(v3), "database\x00d\x00\x00"...), ErrNoUser},
		{"empty user", append(bytes.Clone(v3), "user\x00\x00\x00"...), ErrNoUser},
		{"no list terminator", append(bytes.Clone(v3), "user\x00u\x00"...), ErrMalformed},
		{"value unterminated", append(bytes.Clone(v3), "user\x00u"...), ErrMalformed},
		{"trailing after terminator", append(bytes.Clone(v3), "user\x00u\x00\x00x"...), ErrMalformed},
		{"duplicate parameter", append(bytes.Clone(v3), "user\x00u\x00user\x00v\x00\x00"...), ErrMalformed},
		{"ssl with trailing bytes", code(SSLRequestCode, 0), ErrMalformed},
		{"cancel short", code(CancelRequestCode, 0, 0, 0, 1), ErrMalformed},
		{"cancel long secret", code(CancelRequestCode, make([]byte, 12)...), ErrMalformed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := DecodeStartup(tc.body)
			require.ErrorIs(t, err, tc.want)
		})
	}
}

func TestDecodeStartupUnsupportedProtocol(t *testing.T) {
	t.Parallel()
	for _, version := range []uint32{2 << 16, 4<<16 | 1, 1234} {
		_, err := DecodeStartup(binary.BigEndian.AppendUint32(nil, version))
		var upe *UnsupportedProtocolError
		require.ErrorAs(t, err, &upe)
		require.Equal(t, uint16(version>>16), upe.Major)
		require.Equal(t, uint16(version), upe.Minor)
		require.Equal(t, "0A000", upe.SQLState())
		require.Contains(t, err.Error(), "unsupported frontend protocol")
	}
}

func TestReadStartupErrors(t *testing.T) {
	t.Parallel()
	be := func(v uint32) []byte { return binary.BigEndian.AppendUint32(nil, v) }
	tests := []struct {
		name   string
		input  []byte
		maxLen int
		want   error
	}{
		{"empty", nil, 0, io.EOF},
		{"short length", []byte{0, 0}, 0, io.ErrUnexpectedEOF},
		{"length below minimum", be(7), 0, ErrInvalidLength},
		{"too large for default", be(10001), 0, ErrMessageTooLarge},
		{"too large for custom", be(101), 100, ErrMessageTooLarge},
		{"truncated payload", append(be(16), 0, 0, 0), 0, io.ErrUnexpectedEOF},
		{"eof after length", be(16), 0, io.ErrUnexpectedEOF},
	}
	for _, tc := range tests {
		for name, read := range startupReaders {
			t.Run(tc.name+"/"+name, func(t *testing.T) {
				_, err := read(bytes.NewReader(tc.input), tc.maxLen)
				require.ErrorIs(t, err, tc.want)
			})
		}
	}
}

// startupReaders are the two ways of reading a startup packet: each call
// of NextStartup's here is on a Reader of its own.
var startupReaders = map[string]func(io.Reader, int) ([]byte, error){
	"ReadStartup": ReadStartup,
	"NextStartup": func(r io.Reader, maxLen int) ([]byte, error) { return NewReader(r, 0, 0).NextStartup(maxLen) },
}

func TestReadStartupRejectsBeforeReadingPayload(t *testing.T) {
	t.Parallel()
	// Only the length is available: a too-large packet must fail without waiting for
	// (or allocating) the payload.
	for name, read := range startupReaders {
		t.Run(name, func(t *testing.T) {
			var le *MessageTooLargeError
			_, err := read(bytes.NewReader(binary.BigEndian.AppendUint32(nil, 1<<31)), 0)
			require.ErrorAs(t, err, &le)
			require.Equal(t, 1<<31, le.Length)
			require.Equal(t, MaxStartupPacketLength, le.Max)
		})
	}
}

// TestNextStartupReadsAhead: NextStartup takes a packet and what came with
// it in one read, and the packets, then the typed messages after them,
// come out as the stream has them.
func TestNextStartupReadsAhead(t *testing.T) {
	t.Parallel()
	stream := SSLRequest{}.Encode(nil)
	stream = StartupMessage{ProtocolVersion: ProtocolVersion3, Parameters: map[string]string{"user": "u"}, Order: []string{"user"}}.Encode(stream)
	stream = PasswordMessage{Password: "secret"}.Encode(stream)
	src := &countingReader{r: bytes.NewReader(stream)}
	r := NewReader(src, 0, 0)
	p, err := r.NextStartup(0)
	require.NoError(t, err)
	require.Equal(t, SSLRequest{}.Encode(nil)[4:], p)
	require.Equal(t, 1, src.reads, "one read for everything the stream had")
	p, err = r.NextStartup(0)
	require.NoError(t, err)
	m, err := DecodeStartup(p)
	require.NoError(t, err)
	require.Equal(t, "u", m.(*StartupMessage).Parameters["user"])
	f, err := r.Next()
	require.NoError(t, err)
	require.Equal(t, byte(MsgPassword), f.Type())
	require.Zero(t, r.Buffered())
	require.Equal(t, 1, src.reads)
}

// countingReader counts the reads made of r.
type countingReader struct {
	r     io.Reader
	reads int
}

func (c *countingReader) Read(p []byte) (int, error) {
	c.reads++
	return c.r.Read(p)
}

func TestProtocolNegotiation(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		version uint32
		params  []string // name, value, ...
		want    *NegotiateProtocolVersion
	}{
		{"3.0 without options", ProtocolVersion3, []string{"user", "u"}, nil},
		{"3.0 with a parameter that only looks like an option", ProtocolVersion3, []string{"user", "u", "pq_.x", "1"}, nil},
		{"3.2", ProtocolVersion3 | 2, []string{"user", "u"},
			&NegotiateProtocolVersion{NewestMinor: ProtocolVersion3}},
		{"3.0 with options in wire order", ProtocolVersion3, []string{"_pq_.b", "1", "user", "u", "_pq_.a", ""},
			&NegotiateProtocolVersion{NewestMinor: ProtocolVersion3, UnsupportedOptions: []string{"_pq_.b", "_pq_.a"}}},
		{"3.65535 with an option", ProtocolVersion3 | 0xffff, []string{"user", "u", "_pq_.", "x"},
			&NegotiateProtocolVersion{NewestMinor: ProtocolVersion3, UnsupportedOptions: []string{"_pq_."}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := StartupMessage{ProtocolVersion: tc.version, Parameters: map[string]string{}}
			for i := 0; i < len(tc.params); i += 2 {
				m.Parameters[tc.params[i]] = tc.params[i+1]
				m.Order = append(m.Order, tc.params[i])
			}
			// Through the wire, as the session sees it.
			decoded, err := DecodeStartup(m.Encode(nil)[4:])
			require.NoError(t, err)
			got, ok := decoded.(*StartupMessage).ProtocolNegotiation()
			if tc.want == nil {
				require.False(t, ok)
				return
			}
			require.True(t, ok)
			require.Equal(t, *tc.want, got)
			// pgx's decoder reads the same message.
			var oracle pgproto3.NegotiateProtocolVersion
			require.NoError(t, oracle.Decode(Frame(got.Encode(nil)).Body()))
			require.Equal(t, got.NewestMinor, oracle.NewestMinorProtocol)
			require.Equal(t, len(got.UnsupportedOptions), len(oracle.UnrecognizedOptions))
			for i, o := range got.UnsupportedOptions {
				require.Equal(t, o, oracle.UnrecognizedOptions[i])
			}
		})
	}
}
