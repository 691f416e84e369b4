package session

import "github.com/doorman-go/doorman/internal/protocol"

// safePoint is the release rule of transaction pooling, checked at each
// ReadyForQuery: a server connection may go back to the pool only when
// every Query, Sync and FunctionCall the client sent has had its
// ReadyForQuery (pending 0), no extended-protocol message waits for a Sync
// (not partial), and the server is outside a transaction block (status
// 'I'). A COPY is inside its Query, so it counts as pending.
func safePoint(pending int, partial bool, status byte) bool {
	return pending == 0 && !partial && status == protocol.TxIdle
}
