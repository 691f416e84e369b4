package floor

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"time"
)

// Request codes of the startup packets that are not a startup message.
const (
	codeCancel = 80877102
	codeSSL    = 80877103
	codeGSSEnc = 80877104
	// maxStartupLen is PostgreSQL's bound on a startup packet.
	maxStartupLen = 10000
	loginTimeout  = 10 * time.Second
)

// errCancelRequest: the client sent a cancel request, which the floor does
// not forward.
var errCancelRequest = errors.New("cancel request")

// readStartup reads c's startup message, answering SSLRequest and
// GSSENCRequest with 'N' (the floor speaks plaintext), and returns it
// whole, length included.
func readStartup(c net.Conn) ([]byte, error) {
	for {
		var hdr [8]byte
		if _, err := io.ReadFull(c, hdr[:]); err != nil {
			return nil, fmt.Errorf("read startup packet: %w", err)
		}
		n := int(binary.BigEndian.Uint32(hdr[:4]))
		code := binary.BigEndian.Uint32(hdr[4:])
		if n < 8 || n > maxStartupLen {
			return nil, fmt.Errorf("startup packet of %d bytes", n)
		}
		if n == 8 && (code == codeSSL || code == codeGSSEnc) {
			if _, err := c.Write([]byte{'N'}); err != nil {
				return nil, fmt.Errorf("answer encryption request: %w", err)
			}
			continue
		}
		if code == codeCancel {
			return nil, errCancelRequest
		}
		pkt := make([]byte, n)
		copy(pkt, hdr[:])
		if _, err := io.ReadFull(c, pkt[8:]); err != nil {
			return nil, fmt.Errorf("read startup packet: %w", err)
		}
		return pkt, nil
	}
}

// loginVia reads client's startup message, connects to target and sends
// it there; the caller then forwards the rest of the login.
func loginVia(ctx context.Context, client *net.TCPConn, target string) (*net.TCPConn, error) {
	_ = client.SetDeadline(time.Now().Add(loginTimeout))
	// Serve's end does not wait out a client that sends nothing.
	stop := context.AfterFunc(ctx, func() { _ = client.SetDeadline(time.Unix(1, 0)) })
	pkt, err := readStartup(client)
	if !stop() || err != nil {
		return nil, errors.Join(err, ctx.Err())
	}
	_ = client.SetDeadline(time.Time{})
	var d net.Dialer
	s, err := d.DialContext(ctx, "tcp", target)
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", target, err)
	}
	if _, err := s.Write(pkt); err != nil {
		_ = s.Close()
		return nil, fmt.Errorf("send startup packet: %w", err)
	}
	return s.(*net.TCPConn), nil
}
