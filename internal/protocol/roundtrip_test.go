package protocol

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/require"
)

// codec is what every typed message implements (through its pointer).
type codec interface {
	Encode(dst []byte) []byte
	Decode(body []byte) error
}

func roundTripCases() []struct {
	name string
	typ  byte
	in   codec
	out  codec
} {
	return []struct {
		name string
		typ  byte
		in   codec
		out  codec
	}{
		{"Query", MsgQuery, &Query{String: "select 1; select 2"}, &Query{}},
		{"Query empty", MsgQuery, &Query{}, &Query{}},
		{"Parse", MsgParse, &Parse{Name: "s1", Query: "select $1::int", ParamOIDs: []uint32{23, 25}}, &Parse{}},
		{"Parse unnamed", MsgParse, &Parse{Query: "select 1"}, &Parse{}},
		{"Bind", MsgBind, &Bind{Portal: "p", Statement: "s1", ParamFormats: []int16{0, 1},
			Params: [][]byte{[]byte("42"), nil, {}}, ResultFormats: []int16{1}}, &Bind{}},
		{"Bind empty", MsgBind, &Bind{}, &Bind{}},
		{"Describe statement", MsgDescribe, &Describe{ObjectType: ObjectStatement, Name: "s1"}, &Describe{}},
		{"Describe portal", MsgDescribe, &Describe{ObjectType: ObjectPortal}, &Describe{}},
		{"Execute", MsgExecute, &Execute{Portal: "p", MaxRows: 100}, &Execute{}},
		{"Close", MsgClose, &Close{ObjectType: ObjectStatement, Name: "s1"}, &Close{}},
		{"Sync", MsgSync, &Sync{}, &Sync{}},
		{"Flush", MsgFlush, &Flush{}, &Flush{}},
		{"Terminate", MsgTerminate, &Terminate{}, &Terminate{}},
		{"CopyData", MsgCopyData, &CopyData{Data: []byte("1\tone\n")}, &CopyData{}},
		{"CopyDone", MsgCopyDone, &CopyDone{}, &CopyDone{}},
		{"CopyFail", MsgCopyFail, &CopyFail{Message: "client gave up"}, &CopyFail{}},
		{"FunctionCall", MsgFunctionCall, &FunctionCall{Function: 1598, ArgFormats: []int16{1},
			Args: [][]byte{{0, 0, 0, 1}, nil}, ResultFormat: 1}, &FunctionCall{}},
		{"PasswordMessage", MsgPassword, &PasswordMessage{Password: "md5abc"}, &PasswordMessage{}},
		{"SASLInitialResponse", MsgPassword, &SASLInitialResponse{Mechanism: "SCRAM-SHA-256",
			Data: []byte("n,,n=,r=abc")}, &SASLInitialResponse{}},
		{"SASLInitialResponse no data", MsgPassword, &SASLInitialResponse{Mechanism: "SCRAM-SHA-256"}, &SASLInitialResponse{}},
		{"SASLResponse", MsgPassword, &SASLResponse{Data: []byte("c=biws,r=abc,p=xyz")}, &SASLResponse{}},
		{"ParameterStatus", MsgParameterStatus, &ParameterStatus{Name: "TimeZone", Value: "UTC"}, &ParameterStatus{}},
		{"BackendKeyData", MsgBackendKeyData, &BackendKeyData{ProcessID: 1234, SecretKey: 0xDEADBEEF}, &BackendKeyData{}},
		{"ReadyForQuery", MsgReadyForQuery, &ReadyForQuery{TxStatus: TxInBlock}, &ReadyForQuery{}},
		{"CommandComplete", MsgCommandComplete, &CommandComplete{Tag: "INSERT 0 1"}, &CommandComplete{}},
		{"CopyInResponse", MsgCopyInResponse, &CopyInResponse{OverallFormat: 1, ColumnFormats: []int16{1, 1}}, &CopyInResponse{}},
		{"CopyOutResponse", MsgCopyOutResponse, &CopyOutResponse{ColumnFormats: []int16{0}}, &CopyOutResponse{}},
		{"CopyBothResponse", MsgCopyBothResponse, &CopyBothResponse{}, &CopyBothResponse{}},
		{"EmptyQueryResponse", MsgEmptyQueryResponse, &EmptyQueryResponse{}, &EmptyQueryResponse{}},
		{"ParseComplete", MsgParseComplete, &ParseComplete{}, &ParseComplete{}},
		{"BindComplete", MsgBindComplete, &BindComplete{}, &BindComplete{}},
		{"CloseComplete", MsgCloseComplete, &CloseComplete{}, &CloseComplete{}},
		{"NoData", MsgNoData, &NoData{}, &NoData{}},
		{"PortalSuspended", MsgPortalSuspended, &PortalSuspended{}, &PortalSuspended{}},
		{"RowDescription", MsgRowDescription, &RowDescription{Fields: []FieldDescription{
			{Name: "id", TableOID: 16384, ColumnAttr: 1, TypeOID: 23, TypeSize: 4, TypeModifier: -1},
			{Name: "", TypeOID: 25, TypeSize: -1, TypeModifier: -1, Format: 1},
		}}, &RowDescription{}},
		{"DataRow", MsgDataRow, &DataRow{Values: [][]byte{[]byte("1"), nil, {}}}, &DataRow{}},
		{"ParameterDescription", MsgParameterDescription, &ParameterDescription{ParamOIDs: []uint32{23}}, &ParameterDescription{}},
		{"NotificationResponse", MsgNotificationResponse, &NotificationResponse{PID: 7, Channel: "ch", Payload: "hi"}, &NotificationResponse{}},
		{"NegotiateProtocolVersion", MsgNegotiateProtocolVersion, &NegotiateProtocolVersion{NewestMinor: 0,
			UnsupportedOptions: []string{"_pq_.x"}}, &NegotiateProtocolVersion{}},
	}
}

func TestRoundTrip(t *testing.T) {
	t.Parallel()
	for _, tc := range roundTripCases() {
		t.Run(tc.name, func(t *testing.T) {
			prefix := []byte("keep")
			enc := tc.in.Encode(bytes.Clone(prefix))
			require.Equal(t, prefix, enc[:len(prefix)], "Encode must append, not overwrite")
			f := readOneFrame(t, enc[len(prefix):])
			require.Equal(t, tc.typ, f.Type())
			require.NoError(t, tc.out.Decode(f.Body()))
			require.Equal(t, tc.in, tc.out)
		})
	}
}

// readOneFrame checks that b is exactly one well-formed frame, read through a Reader.
func readOneFrame(t *testing.T, b []byte) Frame {
	t.Helper()
	require.Equal(t, len(b)-1, int(binary.BigEndian.Uint32(b[1:5])), "declared length")
	f, err := NewReader(bytes.NewReader(b), 0, 0).Next()
	require.NoError(t, err)
	require.Equal(t, b, []byte(f))
	return f
}

func TestNoticeRoundTrip(t *testing.T) {
	t.Parallel()
	full := Notice{Severity: "ERREUR", SeverityUnlocalized: "ERROR", Code: "42P01", Message: "relation does not exist",
		Detail: "d", Hint: "h", Position: "15", InternalPosition: "3", InternalQuery: "iq", Where: "w",
		SchemaName: "public", TableName: "t", ColumnName: "c", DataTypeName: "int4", ConstraintName: "pk",
		File: "parse_relation.c", Line: "1392", Routine: "parserOpenTable", Unknown: map[byte]string{'Z': "z", 'a': ""}}
	tests := []struct {
		name   string
		in     Notice
		encode func(Notice, []byte) []byte
		typ    byte
	}{
		{"error all fields", full, Notice.EncodeError, MsgErrorResponse},
		{"notice all fields", full, Notice.EncodeNotice, MsgNoticeResponse},
		{"notice minimal", Notice{Severity: "NOTICE", Message: "m"}, Notice.EncodeNotice, MsgNoticeResponse},
		{"empty", Notice{}, Notice.EncodeError, MsgErrorResponse},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := readOneFrame(t, tc.encode(tc.in, nil))
			require.Equal(t, tc.typ, f.Type())
			var out Notice
			require.NoError(t, out.Decode(f.Body()))
			require.Equal(t, tc.in, out)
		})
	}
}

func TestAppendError(t *testing.T) {
	t.Parallel()
	f := readOneFrame(t, AppendError(nil, "FATAL", "08P01", "invalid startup packet"))
	require.Equal(t, MsgErrorResponse, f.Type())
	var n Notice
	require.NoError(t, n.Decode(f.Body()))
	require.Equal(t, Notice{Severity: "FATAL", SeverityUnlocalized: "FATAL", Code: "08P01", Message: "invalid startup packet"}, n)
}

func TestAuthenticationRoundTrip(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		msg  interface{ Encode([]byte) []byte }
	}{
		{"ok", &AuthenticationOk{}},
		{"cleartext", &AuthenticationCleartextPassword{}},
		{"md5", &AuthenticationMD5Password{Salt: [4]byte{1, 2, 3, 4}}},
		{"sasl", &AuthenticationSASL{Mechanisms: []string{"SCRAM-SHA-256-PLUS", "SCRAM-SHA-256"}}},
		{"sasl continue", &AuthenticationSASLContinue{Data: []byte("r=abc,s=c2FsdA==,i=4096")}},
		{"sasl final", &AuthenticationSASLFinal{Data: []byte("v=xyz")}},
		{"sasl final empty", &AuthenticationSASLFinal{Data: []byte{}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := readOneFrame(t, tc.msg.Encode(nil))
			require.Equal(t, MsgAuthentication, f.Type())
			got, err := DecodeAuthentication(f.Body())
			require.NoError(t, err)
			require.Equal(t, tc.msg, got)
		})
	}
}

func TestDecodeAuthenticationErrors(t *testing.T) {
	t.Parallel()
	code := func(c uint32, rest ...byte) []byte { return append(binary.BigEndian.AppendUint32(nil, c), rest...) }
	tests := []struct {
		name string
		body []byte
		want error
	}{
		{"empty", nil, ErrMalformed},
		{"short code", []byte{0, 0}, ErrMalformed},
		{"unknown code", code(99), ErrMalformed},
		{"ok with trailing bytes", code(AuthOK, 1), ErrMalformed},
		{"md5 short salt", code(AuthMD5Password, 1, 2), ErrMalformed},
		{"sasl unterminated", code(AuthSASL, 'S', 'C'), ErrMalformed},
		{"sasl no mechanisms", code(AuthSASL, 0), ErrMalformed},
		{"sasl missing list terminator", code(AuthSASL, 'X', 0), ErrMalformed},
		{"gss", code(AuthGSS), ErrUnsupportedAuthentication},
		{"sspi", code(AuthSSPI), ErrUnsupportedAuthentication},
		{"kerberos", code(AuthKerberosV5), ErrUnsupportedAuthentication},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := DecodeAuthentication(tc.body)
			require.ErrorIs(t, err, tc.want)
		})
	}
}
