package protocol

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"testing"
	"testing/iotest"

	"github.com/stretchr/testify/require"
)

// fuzzMessage checks the property every decoder must have: no panic, and a body that
// decodes re-encodes to a frame that decodes to the same message and the same bytes.
func fuzzMessage[T any, P interface {
	*T
	codec
}](f *testing.F, typ byte, seeds ...P) {
	for _, s := range seeds {
		f.Add([]byte(Frame(s.Encode(nil)).Body()))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		if body == nil {
			body = []byte{} // a Reader never yields a nil body
		}
		first := P(new(T))
		if first.Decode(body) != nil {
			return
		}
		enc := first.Encode(nil)
		require.Equal(t, typ, enc[0])
		require.Equal(t, len(enc)-1, int(binary.BigEndian.Uint32(enc[1:5])))
		second := P(new(T))
		require.NoError(t, second.Decode(enc[5:]))
		require.Equal(t, first, second)
		require.Equal(t, enc, second.Encode(nil))
	})
}

func FuzzDecodeQuery(f *testing.F) {
	fuzzMessage(f, MsgQuery, &Query{String: "select 1"})
}

func FuzzDecodeParse(f *testing.F) {
	fuzzMessage(f, MsgParse, &Parse{Name: "s", Query: "select $1", ParamOIDs: []uint32{23}})
}

func FuzzDecodeBind(f *testing.F) {
	fuzzMessage(f, MsgBind, &Bind{Portal: "p", Statement: "s", ParamFormats: []int16{1},
		Params: [][]byte{{1}, nil, {}}, ResultFormats: []int16{1}}, &Bind{})
}

func FuzzDecodeDescribe(f *testing.F) {
	fuzzMessage(f, MsgDescribe, &Describe{ObjectType: ObjectStatement, Name: "s"})
}

func FuzzDecodeClose(f *testing.F) {
	fuzzMessage(f, MsgClose, &Close{ObjectType: ObjectPortal, Name: "p"})
}

func FuzzDecodeExecute(f *testing.F) {
	fuzzMessage(f, MsgExecute, &Execute{Portal: "p", MaxRows: 5})
}

func FuzzDecodeEmpty(f *testing.F) {
	fuzzMessage(f, MsgSync, &Sync{})
}

func FuzzDecodeCopyData(f *testing.F) {
	fuzzMessage(f, MsgCopyData, &CopyData{Data: []byte("row\n")})
}

func FuzzDecodeCopyFail(f *testing.F) {
	fuzzMessage(f, MsgCopyFail, &CopyFail{Message: "abort"})
}

func FuzzDecodeCopyInResponse(f *testing.F) {
	fuzzMessage(f, MsgCopyInResponse, &CopyInResponse{OverallFormat: 1, ColumnFormats: []int16{1, 1}})
}

func FuzzDecodeFunctionCall(f *testing.F) {
	fuzzMessage(f, MsgFunctionCall, &FunctionCall{Function: 1, ArgFormats: []int16{0}, Args: [][]byte{{1}, nil}, ResultFormat: 1})
}

func FuzzDecodePasswordMessage(f *testing.F) {
	fuzzMessage(f, MsgPassword, &PasswordMessage{Password: "md5deadbeef"})
}

func FuzzDecodeSASLInitialResponse(f *testing.F) {
	fuzzMessage(f, MsgPassword, &SASLInitialResponse{Mechanism: "SCRAM-SHA-256", Data: []byte("n,,n=,r=abc")},
		&SASLInitialResponse{Mechanism: "SCRAM-SHA-256"})
}

func FuzzDecodeSASLResponse(f *testing.F) {
	fuzzMessage(f, MsgPassword, &SASLResponse{Data: []byte("c=biws,r=abc,p=proof")})
}

func FuzzDecodeParameterStatus(f *testing.F) {
	fuzzMessage(f, MsgParameterStatus, &ParameterStatus{Name: "client_encoding", Value: "UTF8"})
}

func FuzzDecodeBackendKeyData(f *testing.F) {
	fuzzMessage(f, MsgBackendKeyData, &BackendKeyData{ProcessID: 1, SecretKey: 2})
}

func FuzzDecodeReadyForQuery(f *testing.F) {
	fuzzMessage(f, MsgReadyForQuery, &ReadyForQuery{TxStatus: TxIdle})
}

func FuzzDecodeCommandComplete(f *testing.F) {
	fuzzMessage(f, MsgCommandComplete, &CommandComplete{Tag: "SELECT 1"})
}

func FuzzDecodeRowDescription(f *testing.F) {
	fuzzMessage(f, MsgRowDescription, &RowDescription{Fields: []FieldDescription{{Name: "a", TypeOID: 23, TypeSize: 4, TypeModifier: -1}}})
}

func FuzzDecodeDataRow(f *testing.F) {
	fuzzMessage(f, MsgDataRow, &DataRow{Values: [][]byte{[]byte("1"), nil, {}}})
}

func FuzzDecodeParameterDescription(f *testing.F) {
	fuzzMessage(f, MsgParameterDescription, &ParameterDescription{ParamOIDs: []uint32{23, 25}})
}

func FuzzDecodeNotificationResponse(f *testing.F) {
	fuzzMessage(f, MsgNotificationResponse, &NotificationResponse{PID: 1, Channel: "c", Payload: "p"})
}

func FuzzDecodeNegotiateProtocolVersion(f *testing.F) {
	fuzzMessage(f, MsgNegotiateProtocolVersion, &NegotiateProtocolVersion{UnsupportedOptions: []string{"_pq_.a"}})
}

func FuzzDecodeNotice(f *testing.F) {
	fuzzMessage(f, MsgErrorResponse, &errorFrame{Notice{Severity: "ERROR", Code: "XX000", Message: "m",
		Unknown: map[byte]string{'Z': "z"}}})
}

func FuzzDecodeAuthentication(f *testing.F) {
	for _, m := range []interface{ Encode([]byte) []byte }{
		AuthenticationOk{}, AuthenticationCleartextPassword{}, AuthenticationMD5Password{Salt: [4]byte{1, 2, 3, 4}},
		AuthenticationSASL{Mechanisms: []string{"SCRAM-SHA-256"}}, AuthenticationSASLContinue{Data: []byte("r=1")},
		AuthenticationSASLFinal{Data: []byte("v=1")},
	} {
		f.Add([]byte(Frame(m.Encode(nil)).Body()))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		first, err := DecodeAuthentication(body)
		if err != nil {
			return
		}
		enc := first.(interface{ Encode([]byte) []byte }).Encode(nil)
		require.Equal(t, MsgAuthentication, enc[0])
		second, err := DecodeAuthentication(enc[5:])
		require.NoError(t, err)
		require.Equal(t, first, second)
	})
}

func FuzzDecodeStartup(f *testing.F) {
	for _, m := range []interface{ Encode([]byte) []byte }{
		StartupMessage{ProtocolVersion: ProtocolVersion3, Parameters: map[string]string{"user": "u", "database": "d"},
			Order: []string{"user", "database"}},
		StartupMessage{ProtocolVersion: ProtocolVersion3 | 2, Parameters: map[string]string{"user": "u", "_pq_.x": "1"},
			Order: []string{"_pq_.x", "user"}},
		SSLRequest{}, GSSENCRequest{}, CancelRequest{ProcessID: 1, SecretKey: 2},
	} {
		f.Add(m.Encode(nil)[4:])
	}
	f.Fuzz(func(t *testing.T, payload []byte) {
		first, err := DecodeStartup(payload)
		if err != nil {
			return
		}
		if sm, ok := first.(*StartupMessage); ok {
			checkNegotiation(t, sm)
		}
		enc := first.(interface{ Encode([]byte) []byte }).Encode(nil)
		require.Equal(t, len(enc), int(binary.BigEndian.Uint32(enc)))
		second, err := DecodeStartup(enc[4:])
		require.NoError(t, err)
		require.Equal(t, first, second)
	})
}

// FuzzNextStartup: NextStartup reads any stream as ReadStartup does, packet
// by packet (the same payloads, then the same error), whatever the sizes of
// the source's reads.
func FuzzNextStartup(f *testing.F) {
	f.Add(append(SSLRequest{}.Encode(nil), StartupMessage{ProtocolVersion: ProtocolVersion3,
		Parameters: map[string]string{"user": "u"}, Order: []string{"user"}}.Encode(nil)...), uint8(3))
	f.Add(CancelRequest{ProcessID: 1, SecretKey: 2}.Encode(nil), uint8(0))
	f.Add([]byte{0, 0, 0, 7, 1, 2, 3}, uint8(1))
	f.Add([]byte{0, 0, 0x27, 0x11}, uint8(200))
	f.Fuzz(func(t *testing.T, stream []byte, chunk uint8) {
		plain := bytes.NewReader(stream)
		r := NewReader(&chunkReader{b: stream, n: int(chunk) + 1}, 0, 0)
		for {
			want, werr := ReadStartup(plain, 0)
			got, gerr := r.NextStartup(0)
			if werr != nil || gerr != nil {
				require.Equal(t, werr == nil, gerr == nil, "ReadStartup: %v, NextStartup: %v", werr, gerr)
				for _, e := range []error{io.EOF, io.ErrUnexpectedEOF, ErrInvalidLength, ErrMessageTooLarge} {
					require.Equal(t, errors.Is(werr, e), errors.Is(gerr, e), "ReadStartup: %v, NextStartup: %v", werr, gerr)
				}
				return
			}
			require.Equal(t, want, got)
		}
	})
}

// checkNegotiation: the NegotiateProtocolVersion for a decoded startup
// message lists exactly its "_pq_." parameters, is due exactly when the
// minor version is above 0 or there are such options, and round-trips.
func checkNegotiation(t *testing.T, sm *StartupMessage) {
	nv, ok := sm.ProtocolNegotiation()
	var opts []string
	for _, name := range sm.Order {
		if len(name) >= len(ProtocolOptionPrefix) && name[:len(ProtocolOptionPrefix)] == ProtocolOptionPrefix {
			opts = append(opts, name)
		}
	}
	require.Equal(t, sm.ProtocolVersion&0xffff != 0 || len(opts) > 0, ok)
	if !ok {
		return
	}
	require.Equal(t, opts, nv.UnsupportedOptions)
	var back NegotiateProtocolVersion
	require.NoError(t, back.Decode(Frame(nv.Encode(nil)).Body()))
	require.Equal(t, nv.NewestMinor, back.NewestMinor)
	require.Equal(t, len(nv.UnsupportedOptions), len(back.UnsupportedOptions))
}

// FuzzReader checks the framer: no panic; Next and ForwardFrame agree (up to a truncated
// last frame); the frames are
// exactly a prefix of the input; every error is one of the documented ones.
func FuzzReader(f *testing.F) {
	f.Add(sampleStream(3, []byte("abc")), uint8(0))
	f.Add([]byte{'Q', 0, 0, 0, 3}, uint8(1))
	f.Add([]byte{'d', 0, 0, 1, 0, 'x'}, uint8(2))
	f.Fuzz(func(t *testing.T, input []byte, mode uint8) {
		var src io.Reader = bytes.NewReader(input)
		if mode&1 != 0 {
			src = iotest.OneByteReader(src)
		}
		bufSize := []int{1, 7, 64, 0}[mode>>1&3]
		var viaNext, viaForward bytes.Buffer
		r := NewReader(src, bufSize, 300)
		nextErr := readAll(r, &viaNext, false)
		r.Reset(bytes.NewReader(input))
		forwardErr := readAll(r, &viaForward, true)

		// Streaming may have passed on part of a truncated last frame before seeing EOF.
		require.True(t, bytes.HasPrefix(viaForward.Bytes(), viaNext.Bytes()))
		require.True(t, bytes.HasPrefix(input, viaForward.Bytes()))
		if !errors.Is(nextErr, io.ErrUnexpectedEOF) {
			require.True(t, bytes.Equal(viaNext.Bytes(), viaForward.Bytes()))
		}
		for _, err := range []error{nextErr, forwardErr} {
			ok := errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
				errors.Is(err, ErrInvalidLength) || errors.Is(err, ErrMessageTooLarge)
			require.True(t, ok, "unexpected error %v", err)
		}
		if nextErr == io.EOF {
			require.True(t, bytes.Equal(input, viaNext.Bytes()), "clean EOF after all of the input")
		}
	})
}

func readAll(r *Reader, w *bytes.Buffer, forward bool) error {
	for i := 0; ; i++ {
		if i%3 == 2 {
			r.Release()
			r.Shrink()
		}
		if forward {
			if _, err := r.ForwardFrame(w); err != nil {
				return err
			}
			continue
		}
		f, err := r.Next()
		if err != nil {
			return err
		}
		if int(binary.BigEndian.Uint32(f[1:5])) != len(f)-1 {
			panic("frame length disagrees with its header")
		}
		w.Write(f)
	}
}
