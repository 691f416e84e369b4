package protocol

import (
	"encoding/binary"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestDecodeMalformed(t *testing.T) {
	t.Parallel()
	u16 := func(v uint16) []byte { return binary.BigEndian.AppendUint16(nil, v) }
	cat := func(parts ...[]byte) []byte {
		var b []byte
		for _, p := range parts {
			b = append(b, p...)
		}
		return b
	}
	tests := []struct {
		name string
		msg  interface{ Decode([]byte) error }
		body []byte
	}{
		{"Query unterminated", &Query{}, []byte("select 1")},
		{"Query trailing", &Query{}, []byte("select 1\x00x")},
		{"Parse oid count beyond body", &Parse{}, cat([]byte("s\x00q\x00"), u16(3), []byte{0, 0, 0, 23})},
		{"Parse oid count short of body", &Parse{}, cat([]byte("s\x00q\x00"), u16(1), make([]byte, 8))},
		{"Bind huge param count", &Bind{}, cat([]byte("\x00\x00"), u16(0), u16(65535))},
		{"Bind param length beyond body", &Bind{}, cat([]byte("\x00\x00"), u16(0), u16(1), []byte{0, 0, 0, 9, 'x'})},
		{"Bind negative param length", &Bind{}, cat([]byte("\x00\x00"), u16(0), u16(1), []byte{0xFF, 0xFF, 0xFF, 0xFE}, u16(0))},
		{"Bind missing result formats", &Bind{}, cat([]byte("\x00\x00"), u16(0), u16(0))},
		{"Describe bad object type", &Describe{}, []byte("Xname\x00")},
		{"Describe empty", &Describe{}, nil},
		{"Close trailing", &Close{}, []byte("Sname\x00\x00")},
		{"Execute short", &Execute{}, []byte("p\x00\x00\x00")},
		{"Sync with body", &Sync{}, []byte{1}},
		{"CopyFail unterminated", &CopyFail{}, []byte("oops")},
		{"CopyInResponse bad format", &CopyInResponse{}, cat([]byte{2}, u16(0))},
		{"CopyOutResponse count beyond body", &CopyOutResponse{}, cat([]byte{0}, u16(2), u16(0))},
		{"FunctionCall no result format", &FunctionCall{}, cat([]byte{0, 0, 0, 1}, u16(0), u16(0))},
		{"SASLInitialResponse data length beyond body", &SASLInitialResponse{}, cat([]byte("M\x00"), []byte{0, 0, 0, 5, 'a'})},
		{"SASLInitialResponse negative length", &SASLInitialResponse{}, cat([]byte("M\x00"), []byte{0xFF, 0xFF, 0xFF, 0xF0})},
		{"ReadyForQuery bad status", &ReadyForQuery{}, []byte{'X'}},
		{"ReadyForQuery empty", &ReadyForQuery{}, nil},
		{"BackendKeyData long", &BackendKeyData{}, make([]byte, 12)},
		{"RowDescription count beyond body", &RowDescription{}, cat(u16(1000), make([]byte, 19))},
		{"RowDescription truncated field", &RowDescription{}, cat(u16(1), []byte("id\x00"), make([]byte, 17))},
		{"DataRow huge count", &DataRow{}, u16(65535)},
		{"DataRow trailing", &DataRow{}, cat(u16(0), []byte{1})},
		{"Notice unterminated field", &Notice{}, []byte("SERROR")},
		{"Notice missing terminator", &Notice{}, []byte("SERROR\x00")},
		{"Notice trailing", &Notice{}, []byte("\x00x")},
		{"NegotiateProtocolVersion huge count", &NegotiateProtocolVersion{}, []byte{0, 0, 0, 0, 0xFF, 0xFF, 0xFF, 0xFF, 'a', 0}},
		{"ParameterStatus missing value", &ParameterStatus{}, []byte("a\x00")},
		{"NotificationResponse short", &NotificationResponse{}, []byte{0, 0}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			require.ErrorIs(t, tc.msg.Decode(tc.body), ErrMalformed)
		})
	}
}

// TestHostileCountsDoNotAllocate checks that a count declared on the wire is validated
// against the body before anything proportional to it is allocated.
func TestHostileCountsDoNotAllocate(t *testing.T) {
	bodies := map[string]codec{
		"\x00\x00\x00\x00\xff\xff":         &Bind{}, // 65535 parameter formats
		"\x00\x00\x00\x00\x00\x00\xff\xff": &Bind{}, // 65535 parameters
		"\xff\xff":                         &DataRow{},
		"\xff\xff\x00\x00":                 &RowDescription{},
	}
	for body, msg := range bodies {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		const runs = 100
		for range runs {
			require.ErrorIs(t, msg.Decode([]byte(body)), ErrMalformed)
		}
		runtime.ReadMemStats(&after)
		perRun := (after.TotalAlloc - before.TotalAlloc) / runs
		require.Less(t, perRun, uint64(4096), "%T with body %q allocates %d bytes per decode", msg, body, perRun)
	}
}

func TestFrameHelpers(t *testing.T) {
	t.Parallel()
	rfq := Frame(ReadyForQuery{TxStatus: TxFailed}.Encode(nil))
	require.Equal(t, TxFailed, ReadyForQueryStatus(rfq))
	require.Equal(t, byte(0), ReadyForQueryStatus(Frame(Sync{}.Encode(nil))), "not a ReadyForQuery")
	require.Equal(t, byte(0), ReadyForQueryStatus(Frame{MsgReadyForQuery, 0, 0, 0, 5, 'x'}), "bad status")
	require.Equal(t, byte(0), ReadyForQueryStatus(Frame{MsgReadyForQuery, 0, 0, 0, 4}), "no status")

	parse := Frame(Parse{Name: "stmt_1", Query: "select 1"}.Encode(nil))
	name, err := ParseStatementName(parse.Body())
	require.NoError(t, err)
	require.Equal(t, "stmt_1", string(name))
	_, err = ParseStatementName([]byte("no terminator"))
	require.ErrorIs(t, err, ErrMalformed)

	bind := Frame(Bind{Portal: "p1", Statement: "stmt_1", Params: [][]byte{[]byte("x")}}.Encode(nil))
	portal, stmt, err := BindNames(bind.Body())
	require.NoError(t, err)
	require.Equal(t, "p1", string(portal))
	require.Equal(t, "stmt_1", string(stmt))

	typ, name, err := ObjectName(Frame(Close{ObjectType: ObjectPortal, Name: "p1"}.Encode(nil)).Body())
	require.NoError(t, err)
	require.Equal(t, ObjectPortal, typ)
	require.Equal(t, "p1", string(name))

	tag, err := CommandTag(Frame(CommandComplete{Tag: "UPDATE 3"}.Encode(nil)).Body())
	require.NoError(t, err)
	require.Equal(t, "UPDATE 3", string(tag))
	_, err = CommandTag([]byte("UPDATE 3"))
	require.ErrorIs(t, err, ErrMalformed)
}

func TestHelpersDoNotAllocate(t *testing.T) {
	parse := Frame(Parse{Name: "stmt_1", Query: "select 1"}.Encode(nil))
	rfq := Frame(ReadyForQuery{TxStatus: TxIdle}.Encode(nil))
	tag := Frame(CommandComplete{Tag: "SELECT 1"}.Encode(nil))
	allocs := testing.AllocsPerRun(100, func() {
		_, _ = ParseStatementName(parse.Body())
		_ = ReadyForQueryStatus(rfq)
		_, _ = CommandTag(tag.Body())
	})
	require.Zero(t, allocs)
}
