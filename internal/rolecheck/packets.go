package rolecheck

import (
	"github.com/doorman-go/doorman/internal/protocol"
)

// RecoveryQuery is the query of MethodRecovery, exactly as seed 001 sends it.
const RecoveryQuery = "select pg_is_in_recovery();"

// StartupPacket returns the StartupMessage a check sends: user, database (left
// out when empty), then log_disconnections=off when quiet, then
// application_name when not empty, in that wire order.
func StartupPacket(user, database string, quiet bool, appName string) []byte {
	m := protocol.StartupMessage{ProtocolVersion: protocol.ProtocolVersion3, Parameters: map[string]string{}}
	add := func(k, v string) {
		m.Parameters[k] = v
		m.Order = append(m.Order, k)
	}
	add("user", user)
	if database != "" {
		add("database", database)
	}
	if quiet {
		add("log_disconnections", "off")
	}
	if appName != "" {
		add("application_name", appName)
	}
	return m.Encode(nil)
}

// TerminatePacket is the Terminate message, 5800000004 in hex.
func TerminatePacket() []byte { return protocol.Terminate{}.Encode(nil) }

// QueryPacket is the simple-protocol Query message for q.
func QueryPacket(q string) []byte { return protocol.Query{String: q}.Encode(nil) }

// HotStandbyPattern is the byte string "in_hot_standby\0on\0" (replica) or
// "in_hot_standby\0off\0" (primary) that a tcp-check expects in the
// ParameterStatus answer. It appears in no other message of the login answer,
// so the 5-byte message header need not be matched.
func HotStandbyPattern(standby bool) []byte {
	v := "off"
	if standby {
		v = "on"
	}
	b := append([]byte("in_hot_standby"), 0)
	b = append(b, v...)
	return append(b, 0)
}

// RecoveryPattern is what a tcp-check of MethodRecovery expects: the last byte
// of the DataRow ('f' on a primary, 't' on a replica) followed by the header
// of CommandComplete "SELECT 1" (length 13).
func RecoveryPattern(inRecovery bool) []byte {
	v := byte('f')
	if inRecovery {
		v = 't'
	}
	tag := protocol.CommandComplete{Tag: "SELECT 1"}.Encode(nil)
	return append([]byte{v}, tag[:5]...)
}

// ReadyForQueryPrefix is the start of ReadyForQuery, "Z" and its length 5,
// without the transaction status byte.
func ReadyForQueryPrefix() []byte {
	return protocol.ReadyForQuery{TxStatus: protocol.TxIdle}.Encode(nil)[:5]
}
