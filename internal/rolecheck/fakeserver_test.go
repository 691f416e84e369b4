package rolecheck

import (
	"net"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/doorman-go/doorman/internal/protocol"
)

// fakeServer is a minimal trust-auth PostgreSQL on 127.0.0.1 that answers
// logins with the given in_hot_standby and pg_is_in_recovery() value and
// records the type bytes of the messages each client sent after startup.
type fakeServer struct {
	ln      net.Listener
	standby string // "on", "off" or "" (parameter not sent)
	wg      sync.WaitGroup

	mu       sync.Mutex
	sessions [][]byte // message types per connection
}

func startFakeServer(t *testing.T, standby string) *fakeServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	f := &fakeServer{ln: ln, standby: standby}
	f.wg.Add(1)
	go f.acceptLoop()
	t.Cleanup(func() {
		ln.Close()
		f.wg.Wait()
	})
	return f
}

func (f *fakeServer) port() int { return f.ln.Addr().(*net.TCPAddr).Port }

func (f *fakeServer) acceptLoop() {
	defer f.wg.Done()
	for {
		c, err := f.ln.Accept()
		if err != nil {
			return
		}
		f.wg.Add(1)
		go f.serve(c)
	}
}

func (f *fakeServer) serve(c net.Conn) {
	defer f.wg.Done()
	defer c.Close()
	if _, err := protocol.ReadStartup(c, 0); err != nil {
		return
	}
	out := protocol.AuthenticationOk{}.Encode(nil)
	if f.standby != "" {
		out = protocol.ParameterStatus{Name: "in_hot_standby", Value: f.standby}.Encode(out)
	}
	out = protocol.ParameterStatus{Name: "server_version", Value: "15.0-fake"}.Encode(out)
	out = protocol.ReadyForQuery{TxStatus: protocol.TxIdle}.Encode(out)
	if _, err := c.Write(out); err != nil {
		return
	}
	var types []byte
	defer func() {
		f.mu.Lock()
		f.sessions = append(f.sessions, types)
		f.mu.Unlock()
	}()
	rd := protocol.NewReader(c, 0, 0)
	for {
		fr, err := rd.Next()
		if err != nil {
			return
		}
		types = append(types, fr.Type())
		if fr.Type() == protocol.MsgQuery {
			v := "f"
			if f.standby == "on" {
				v = "t"
			}
			out = protocol.DataRow{Values: [][]byte{[]byte(v)}}.Encode(nil)
			out = protocol.CommandComplete{Tag: "SELECT 1"}.Encode(out)
			out = protocol.ReadyForQuery{TxStatus: protocol.TxIdle}.Encode(out)
			if _, err := c.Write(out); err != nil {
				return
			}
		}
	}
}

func (f *fakeServer) recorded() [][]byte {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([][]byte(nil), f.sessions...)
}
