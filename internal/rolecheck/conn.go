package rolecheck

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"time"

	"github.com/doorman-go/doorman/internal/auth"
	"github.com/doorman-go/doorman/internal/protocol"
)

// maxServerMessage caps what a check accepts from the server: login answers
// and one-row results are tiny, a hostile or confused peer must not make us
// allocate much.
const maxServerMessage = 1 << 20

// session is one logged-in connection of a check. It is used by one goroutine.
type session struct {
	conn   net.Conn
	rd     *protocol.Reader
	params map[string]string
}

// dial connects and applies the overall deadline of ctx to the connection.
func dial(ctx context.Context, o Options) (*session, error) {
	network := "tcp"
	if strings.HasPrefix(o.Host, "/") {
		network = "unix"
	}
	d := net.Dialer{Timeout: o.ConnectTimeout}
	conn, err := d.DialContext(ctx, network, o.Addr())
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", o.Addr(), err)
	}
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	return &session{conn: conn, rd: protocol.NewReader(conn, 0, maxServerMessage), params: map[string]string{}}, nil
}

// login sends the startup packet, authenticates and reads up to the first
// ReadyForQuery, collecting ParameterStatus values.
func (s *session) login(o Options) error {
	if _, err := s.conn.Write(StartupPacket(o.User, o.Database, o.QuietDisconnect, o.ApplicationName)); err != nil {
		return fmt.Errorf("send startup packet: %w", err)
	}
	var scram *auth.SCRAMClient
	for {
		f, err := s.rd.Next()
		if err != nil {
			return fmt.Errorf("read login answer: %w", err)
		}
		switch f.Type() {
		case protocol.MsgAuthentication:
			if scram, err = s.authenticate(f.Body(), o, scram); err != nil {
				return err
			}
		case protocol.MsgParameterStatus:
			var ps protocol.ParameterStatus
			if err := ps.Decode(f.Body()); err != nil {
				return fmt.Errorf("decode ParameterStatus: %w", err)
			}
			s.params[ps.Name] = ps.Value
		case protocol.MsgErrorResponse:
			return serverError(f.Body())
		case protocol.MsgReadyForQuery:
			return nil
		case protocol.MsgBackendKeyData, protocol.MsgNoticeResponse, protocol.MsgNegotiateProtocolVersion:
		default:
			return fmt.Errorf("unexpected message %q during login", f.Type())
		}
	}
}

// authenticate answers one Authentication request.
func (s *session) authenticate(body []byte, o Options, scram *auth.SCRAMClient) (*auth.SCRAMClient, error) {
	msg, err := protocol.DecodeAuthentication(body)
	if err != nil {
		return nil, fmt.Errorf("decode authentication request: %w", err)
	}
	var out []byte
	switch m := msg.(type) {
	case *protocol.AuthenticationOk:
		return scram, nil
	case *protocol.AuthenticationCleartextPassword:
		if o.Password == "" {
			return nil, ErrNoPassword
		}
		out = protocol.PasswordMessage{Password: o.Password}.Encode(nil)
	case *protocol.AuthenticationMD5Password:
		if o.Password == "" {
			return nil, ErrNoPassword
		}
		out = protocol.PasswordMessage{Password: auth.MD5Response(auth.MD5Verifier(o.User, o.Password), m.Salt)}.Encode(nil)
	case *protocol.AuthenticationSASL:
		if o.Password == "" {
			return nil, ErrNoPassword
		}
		if !slices.Contains(m.Mechanisms, auth.SCRAMMechanism) {
			return nil, fmt.Errorf("server offers SASL mechanisms %v, want %s", m.Mechanisms, auth.SCRAMMechanism)
		}
		scram = auth.NewSCRAMClientPassword(o.Password, nil)
		out = protocol.SASLInitialResponse{Mechanism: auth.SCRAMMechanism, Data: scram.ClientFirst()}.Encode(nil)
	case *protocol.AuthenticationSASLContinue:
		if scram == nil {
			return nil, errors.New("SASLContinue before SASL")
		}
		final, err := scram.ServerFirst(m.Data)
		if err != nil {
			return nil, fmt.Errorf("scram: %w", err)
		}
		out = protocol.SASLResponse{Data: final}.Encode(nil)
	case *protocol.AuthenticationSASLFinal:
		if scram == nil {
			return nil, errors.New("SASLFinal before SASL")
		}
		if err := scram.ServerFinal(m.Data); err != nil {
			return nil, fmt.Errorf("scram: %w", err)
		}
		return scram, nil
	default:
		return nil, fmt.Errorf("unsupported authentication request %T", msg)
	}
	if _, err := s.conn.Write(out); err != nil {
		return nil, fmt.Errorf("send authentication response: %w", err)
	}
	return scram, nil
}

// queryRow runs a simple query that returns at most one row and returns its
// text values (nil for NULL), reading through ReadyForQuery.
func (s *session) queryRow(q string) ([]*string, error) {
	if _, err := s.conn.Write(QueryPacket(q)); err != nil {
		return nil, fmt.Errorf("send query: %w", err)
	}
	var row []*string
	var qerr error
	for {
		f, err := s.rd.Next()
		if err != nil {
			return nil, fmt.Errorf("read query result: %w", err)
		}
		switch f.Type() {
		case protocol.MsgDataRow:
			var dr protocol.DataRow
			if err := dr.Decode(f.Body()); err != nil {
				return nil, fmt.Errorf("decode DataRow: %w", err)
			}
			row = make([]*string, len(dr.Values))
			for i, v := range dr.Values {
				if v != nil {
					str := string(v)
					row[i] = &str
				}
			}
		case protocol.MsgErrorResponse:
			qerr = serverError(f.Body())
		case protocol.MsgReadyForQuery:
			if qerr == nil && row == nil {
				qerr = errors.New("query returned no row")
			}
			return row, qerr
		}
	}
}

// close sends Terminate (best effort, bounded by a short deadline) and closes.
// Terminate first lets the server end the backend cleanly instead of logging
// "could not receive data from client: Connection reset by peer".
func (s *session) close() {
	_ = s.conn.SetWriteDeadline(time.Now().Add(200 * time.Millisecond))
	_, _ = s.conn.Write(TerminatePacket())
	_ = s.conn.Close()
}

func serverError(body []byte) error {
	var n protocol.Notice
	if err := n.Decode(body); err != nil {
		return fmt.Errorf("decode ErrorResponse: %w", err)
	}
	sev := n.SeverityUnlocalized
	if sev == "" {
		sev = n.Severity
	}
	return &ServerError{Severity: sev, Code: n.Code, Message: n.Message}
}
