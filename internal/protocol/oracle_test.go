package protocol

import (
	"testing"

	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/stretchr/testify/require"
)

// pgMessage is the part of pgproto3.Message the oracle test needs.
type pgMessage interface {
	Encode(dst []byte) ([]byte, error)
	Decode(src []byte) error
}

// TestPgproto3Oracle checks that our encoding of a message is byte-identical to pgx's
// pgproto3 encoding of the same message, and that pgproto3 decodes our bytes back to it.
// Together with TestRoundTrip this covers both directions.
func TestPgproto3Oracle(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		ours   interface{ Encode([]byte) []byte }
		theirs pgMessage
		fresh  func() pgMessage
		header int // 5 for typed messages, 4 for startup packets
	}{
		{"Query", Query{String: "select 1"}, &pgproto3.Query{String: "select 1"},
			func() pgMessage { return &pgproto3.Query{} }, 5},
		{"Parse", Parse{Name: "s", Query: "select $1", ParamOIDs: []uint32{23}},
			&pgproto3.Parse{Name: "s", Query: "select $1", ParameterOIDs: []uint32{23}},
			func() pgMessage { return &pgproto3.Parse{} }, 5},
		{"Bind", Bind{Portal: "p", Statement: "s", ParamFormats: []int16{1}, Params: [][]byte{{1, 2}, nil}, ResultFormats: []int16{0, 1}},
			&pgproto3.Bind{DestinationPortal: "p", PreparedStatement: "s", ParameterFormatCodes: []int16{1},
				Parameters: [][]byte{{1, 2}, nil}, ResultFormatCodes: []int16{0, 1}},
			func() pgMessage { return &pgproto3.Bind{} }, 5},
		{"Describe", Describe{ObjectType: ObjectPortal, Name: "p"}, &pgproto3.Describe{ObjectType: 'P', Name: "p"},
			func() pgMessage { return &pgproto3.Describe{} }, 5},
		{"Execute", Execute{Portal: "p", MaxRows: 10}, &pgproto3.Execute{Portal: "p", MaxRows: 10},
			func() pgMessage { return &pgproto3.Execute{} }, 5},
		{"Close", Close{ObjectType: ObjectStatement, Name: "s"}, &pgproto3.Close{ObjectType: 'S', Name: "s"},
			func() pgMessage { return &pgproto3.Close{} }, 5},
		{"Sync", Sync{}, &pgproto3.Sync{}, func() pgMessage { return &pgproto3.Sync{} }, 5},
		{"FunctionCall", FunctionCall{Function: 42, ArgFormats: []int16{1}, Args: [][]byte{{9}, nil}, ResultFormat: 1},
			&pgproto3.FunctionCall{Function: 42, ArgFormatCodes: []uint16{1}, Arguments: [][]byte{{9}, nil}, ResultFormatCode: 1},
			func() pgMessage { return &pgproto3.FunctionCall{} }, 5},
		{"SASLInitialResponse", SASLInitialResponse{Mechanism: "SCRAM-SHA-256", Data: []byte("n,,n=,r=x")},
			&pgproto3.SASLInitialResponse{AuthMechanism: "SCRAM-SHA-256", Data: []byte("n,,n=,r=x")},
			func() pgMessage { return &pgproto3.SASLInitialResponse{} }, 5},
		{"PasswordMessage", PasswordMessage{Password: "secret"}, &pgproto3.PasswordMessage{Password: "secret"},
			func() pgMessage { return &pgproto3.PasswordMessage{} }, 5},
		{"ErrorResponse", errorFrame{Notice{Severity: "ERROR", SeverityUnlocalized: "ERROR", Code: "42601", Message: "syntax error",
			Position: "8", Line: "1180", Routine: "scanner_yyerror", Unknown: map[byte]string{'Z': "z"}}},
			&pgproto3.ErrorResponse{Severity: "ERROR", SeverityUnlocalized: "ERROR", Code: "42601", Message: "syntax error",
				Position: 8, Line: 1180, Routine: "scanner_yyerror", UnknownFields: map[byte]string{'Z': "z"}},
			func() pgMessage { return &pgproto3.ErrorResponse{} }, 5},
		{"RowDescription", RowDescription{Fields: []FieldDescription{{Name: "n", TableOID: 1, ColumnAttr: 2, TypeOID: 23, TypeSize: 4, TypeModifier: -1}}},
			&pgproto3.RowDescription{Fields: []pgproto3.FieldDescription{{Name: []byte("n"), TableOID: 1, TableAttributeNumber: 2,
				DataTypeOID: 23, DataTypeSize: 4, TypeModifier: -1}}},
			func() pgMessage { return &pgproto3.RowDescription{} }, 5},
		{"DataRow", DataRow{Values: [][]byte{[]byte("a"), nil, {}}}, &pgproto3.DataRow{Values: [][]byte{[]byte("a"), nil, {}}},
			func() pgMessage { return &pgproto3.DataRow{} }, 5},
		{"CommandComplete", CommandComplete{Tag: "DELETE 2"}, &pgproto3.CommandComplete{CommandTag: []byte("DELETE 2")},
			func() pgMessage { return &pgproto3.CommandComplete{} }, 5},
		{"ReadyForQuery", ReadyForQuery{TxStatus: TxFailed}, &pgproto3.ReadyForQuery{TxStatus: 'E'},
			func() pgMessage { return &pgproto3.ReadyForQuery{} }, 5},
		{"ParameterStatus", ParameterStatus{Name: "a", Value: "b"}, &pgproto3.ParameterStatus{Name: "a", Value: "b"},
			func() pgMessage { return &pgproto3.ParameterStatus{} }, 5},
		{"BackendKeyData", BackendKeyData{ProcessID: 5, SecretKey: 0x01020304},
			&pgproto3.BackendKeyData{ProcessID: 5, SecretKey: []byte{1, 2, 3, 4}},
			func() pgMessage { return &pgproto3.BackendKeyData{} }, 5},
		{"CopyInResponse", CopyInResponse{OverallFormat: 1, ColumnFormats: []int16{1}},
			&pgproto3.CopyInResponse{OverallFormat: 1, ColumnFormatCodes: []uint16{1}},
			func() pgMessage { return &pgproto3.CopyInResponse{} }, 5},
		{"NotificationResponse", NotificationResponse{PID: 3, Channel: "c", Payload: "p"},
			&pgproto3.NotificationResponse{PID: 3, Channel: "c", Payload: "p"},
			func() pgMessage { return &pgproto3.NotificationResponse{} }, 5},
		{"AuthenticationSASL", AuthenticationSASL{Mechanisms: []string{"SCRAM-SHA-256"}},
			&pgproto3.AuthenticationSASL{AuthMechanisms: []string{"SCRAM-SHA-256"}},
			func() pgMessage { return &pgproto3.AuthenticationSASL{} }, 5},
		{"AuthenticationMD5Password", AuthenticationMD5Password{Salt: [4]byte{9, 8, 7, 6}},
			&pgproto3.AuthenticationMD5Password{Salt: [4]byte{9, 8, 7, 6}},
			func() pgMessage { return &pgproto3.AuthenticationMD5Password{} }, 5},
		{"AuthenticationSASLContinue", AuthenticationSASLContinue{Data: []byte("r=x,s=y,i=4096")},
			&pgproto3.AuthenticationSASLContinue{Data: []byte("r=x,s=y,i=4096")},
			func() pgMessage { return &pgproto3.AuthenticationSASLContinue{} }, 5},
		{"StartupMessage", StartupMessage{ProtocolVersion: ProtocolVersion3, Parameters: map[string]string{"user": "u"}, Order: []string{"user"}},
			&pgproto3.StartupMessage{ProtocolVersion: pgproto3.ProtocolVersionNumber, Parameters: map[string]string{"user": "u"}},
			func() pgMessage { return &pgproto3.StartupMessage{} }, 4},
		{"CancelRequest", CancelRequest{ProcessID: 77, SecretKey: 0x0A0B0C0D},
			&pgproto3.CancelRequest{ProcessID: 77, SecretKey: []byte{10, 11, 12, 13}},
			func() pgMessage { return &pgproto3.CancelRequest{} }, 4},
		{"SSLRequest", SSLRequest{}, &pgproto3.SSLRequest{}, func() pgMessage { return &pgproto3.SSLRequest{} }, 4},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ours := tc.ours.Encode(nil)
			theirs, err := tc.theirs.Encode(nil)
			require.NoError(t, err)
			require.Equal(t, theirs, ours, "encodings differ")

			decoded := tc.fresh()
			require.NoError(t, decoded.Decode(ours[tc.header:]), "pgproto3 rejects our bytes")
			again, err := decoded.Encode(nil)
			require.NoError(t, err)
			require.Equal(t, ours, again)
		})
	}
}

// errorFrame gives Notice the Encode/Decode pair of the other messages, as an ErrorResponse.
type errorFrame struct{ Notice }

func (e errorFrame) Encode(dst []byte) []byte { return e.EncodeError(dst) }
