package backend

import (
	"context"
	"fmt"
	"net"
	"time"

	"github.com/doorman-go/doorman/internal/protocol"
)

// Exec runs sql as a simple query and discards the results. It returns the
// first ErrorResponse as a *ServerError after reading up to ReadyForQuery,
// so the connection stays in sync. A transport failure marks it Broken.
func (c *Conn) Exec(ctx context.Context, sql string) error {
	if dl, ok := ctx.Deadline(); ok {
		_ = c.nc.SetDeadline(dl)
		defer c.nc.SetDeadline(time.Time{})
	}
	if _, err := c.nc.Write(protocol.Query{String: sql}.Encode(nil)); err != nil {
		c.Broken = true
		return fmt.Errorf("send query: %w", err)
	}
	var first error
	for {
		f, err := c.Reader.Next()
		if err != nil {
			c.Broken = true
			return fmt.Errorf("read reply: %w", err)
		}
		switch f.Type() {
		case protocol.MsgErrorResponse:
			if first == nil {
				n := protocol.Notice{}
				if err := n.Decode(f.Body()); err != nil {
					c.Broken = true
					return err
				}
				first = &ServerError{Notice: n}
			}
		case protocol.MsgParameterStatus:
			c.ApplyParameterStatus(f.Body())
		case protocol.MsgReadyForQuery:
			c.TxStatus = protocol.ReadyForQueryStatus(f)
			c.Reader.Shrink()
			return first
		}
	}
}

// ApplyParameterStatus records a ParameterStatus body seen while
// forwarding or in Exec.
func (c *Conn) ApplyParameterStatus(body []byte) {
	var ps protocol.ParameterStatus
	if ps.Decode(body) == nil {
		c.setParam(ps.Name, ps.Value)
	}
}

// setParam records one ParameterStatus value.
func (c *Conn) setParam(name, value string) {
	c.Params[name] = value
	c.ParamsGen++
}

// ParamsMark is an opaque note of a Conn's holder: Of (compared, never
// looked into) was found in sync with Params as of ParamsGen Gen, under
// Mask.
type ParamsMark struct {
	Of   any
	Gen  uint64
	Mask uint8
}

// Cancel asks the server to cancel whatever this connection is running, on a
// new connection to the same address, as PostgreSQL requires.
func (c *Conn) Cancel(ctx context.Context) error {
	return SendCancel(ctx, c.Network, c.Address, c.PID, c.Secret)
}

// SendCancel sends a CancelRequest for (pid, secret) to a server.
func SendCancel(ctx context.Context, network, address string, pid, secret uint32) error {
	var d net.Dialer
	nc, err := d.DialContext(ctx, network, address)
	if err != nil {
		return fmt.Errorf("cancel: dial %s: %w", address, err)
	}
	defer nc.Close()
	if _, err := nc.Write(protocol.CancelRequest{ProcessID: pid, SecretKey: secret}.Encode(nil)); err != nil {
		return fmt.Errorf("cancel: send: %w", err)
	}
	// The server closes the connection when done; wait briefly for that so
	// the cancel is delivered before we return.
	_ = nc.SetReadDeadline(time.Now().Add(time.Second))
	var b [1]byte
	_, _ = nc.Read(b[:])
	return nil
}

// NoteCommandTag records session state a later client must not inherit,
// from the body of a CommandComplete: SET, PREPARE and DECLARE CURSOR.
func (c *Conn) NoteCommandTag(body []byte) {
	switch {
	case len(body) == 0:
	case body[0] == 'S' && string(body) == "SET\x00":
		c.DirtySet = true
	case body[0] == 'P' && string(body) == "PREPARE\x00":
		c.DirtyPrepare = true
	case body[0] == 'D' && string(body) == "DECLARE CURSOR\x00":
		c.DirtyCursor = true
	}
}
