package rolecheck

import (
	"bytes"
	"net"
	"testing"
	"time"

	"github.com/doorman-go/doorman/internal/protocol"
)

// discardConn is a net.Conn whose writes vanish; reads are never used (the
// session reads through its protocol.Reader).
type discardConn struct{ net.Conn }

func (discardConn) Write(b []byte) (int, error)      { return len(b), nil }
func (discardConn) SetDeadline(time.Time) error      { return nil }
func (discardConn) SetWriteDeadline(time.Time) error { return nil }
func (discardConn) Close() error                     { return nil }

// FuzzLogin feeds arbitrary server bytes to the login and query paths: they
// must return (an error or not) without panicking.
func FuzzLogin(f *testing.F) {
	ok := protocol.AuthenticationOk{}.Encode(nil)
	ok = protocol.ParameterStatus{Name: "in_hot_standby", Value: "on"}.Encode(ok)
	ok = protocol.ReadyForQuery{TxStatus: protocol.TxIdle}.Encode(ok)
	f.Add(ok)
	f.Add(protocol.AuthenticationSASL{Mechanisms: []string{"SCRAM-SHA-256"}}.Encode(nil))
	f.Add(protocol.AuthenticationMD5Password{Salt: [4]byte{1, 2, 3, 4}}.Encode(nil))
	f.Add(protocol.AuthenticationSASLContinue{Data: []byte("r=abc,s=QSXCR+Q6sek8bf92,i=4096")}.Encode(nil))
	f.Add(protocol.AppendError(nil, "FATAL", "28P01", "password authentication failed"))
	row := protocol.DataRow{Values: [][]byte{[]byte("t"), []byte("123")}}.Encode(ok)
	f.Add(protocol.ReadyForQuery{TxStatus: protocol.TxIdle}.Encode(row))
	f.Fuzz(func(t *testing.T, data []byte) {
		s := &session{conn: discardConn{}, rd: protocol.NewReader(bytes.NewReader(data), 0, maxServerMessage), params: map[string]string{}}
		o := Options{User: "u", Password: "p", Database: "d"}
		if s.login(o) != nil {
			return
		}
		row, err := s.queryRow(lagQuery)
		if err != nil {
			return
		}
		var st State
		_ = st.scan(row)
	})
}
