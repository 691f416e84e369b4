package proxy

import (
	"errors"
	"io"
	"net"
)

// forward copies bytes both ways between client and server until both
// directions have ended or cut is closed, and closes both
// connections. Both are *net.TCPConn so that io.Copy uses splice(2) on
// Linux. A clean EOF in one direction is passed on as a half-close
// (CloseWrite); an error in either direction aborts both. It reports
// whether the connection ended because cut was closed. serverClosed (may be
// nil) is called, on this goroutine and at once, when the server's side
// ends before the client's and before any cut: the server closed it.
func forward(client, server *net.TCPConn, cut <-chan struct{}, serverClosed func()) (wasCut bool) {
	errc := make(chan pipeEnd, 2)
	go pipeClientToServer(server, client, errc)
	go pipeServerToClient(client, server, errc)
	abort := func() {
		_ = client.Close()
		_ = server.Close()
	}
	for pending := 2; pending > 0; {
		select {
		case end := <-errc:
			if pending == 2 && !wasCut && end.fromServer && serverClosed != nil {
				serverClosed()
			}
			pending--
			if end.err != nil {
				abort()
			}
		case <-cut:
			wasCut = true
			cut = nil
			abort()
		}
	}
	abort()
	return wasCut
}

// pipeEnd is how one direction ended.
type pipeEnd struct {
	fromServer bool
	err        error
}

// pipeClientToServer and pipeServerToClient are separate functions only so
// that goroutine dumps say which direction is which.
func pipeClientToServer(dst, src *net.TCPConn, errc chan<- pipeEnd) {
	errc <- pipeEnd{fromServer: false, err: pipe(dst, src)}
}

func pipeServerToClient(dst, src *net.TCPConn, errc chan<- pipeEnd) {
	errc <- pipeEnd{fromServer: true, err: pipe(dst, src)}
}

func pipe(dst, src *net.TCPConn) error {
	_, err := io.Copy(dst, src)
	if err != nil {
		return err
	}
	if err := dst.CloseWrite(); err != nil && !errors.Is(err, net.ErrClosed) {
		return err
	}
	return nil
}
