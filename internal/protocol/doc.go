// Package protocol frames and encodes PostgreSQL frontend/backend protocol v3 messages.
//
// Reader splits a byte stream into Frames (type byte, length, body) with a hard length
// limit checked before any allocation; ForwardFrame streams oversized messages in
// buffer-sized chunks. Typed messages (Query, Bind, ErrorResponse via Notice, ...) each
// have Decode(body) and an append-style Encode(dst) that writes the whole frame.
// ReadStartup/DecodeStartup handle the untyped startup phase; Reader.NextStartup reads
// those packets through a Reader's buffer, so that what a client sent after a packet stays
// buffered for the next packet or the typed messages that follow.
//
// Splitter is Reader's push-style counterpart, for an event loop that reads many sockets
// into one shared buffer: it returns a message that lies whole in a read in place,
// copies one split across reads only when its caller holds it whole, and passes a
// streamed one on in pieces, so it holds at most the longest message held whole. The
// transaction core (internal/session) frames what its servers send with it.
//
// Buffer ownership: a Frame returned by Reader aliases the Reader's buffer and is valid
// only until the next call on that Reader (Next, NextStartup, PeekHeader, ForwardFrame,
// Release, Shrink, Reset), and so are NextStartup's payload and Unread's bytes; a Piece
// from a Splitter aliases the bytes given to Next or the Splitter's buffer and is valid
// until the next call on that Splitter. Decoded []byte
// fields alias the body passed to Decode; decoded string fields are copies. Encode never
// retains dst.
//
// Concurrency: a Reader or a Splitter is owned by one goroutine; messages are plain
// values. Nothing in this package starts goroutines, logs, or touches the network.
//
// Why not pgx's pgproto3 on the hot path: a pooler forwards most traffic as raw frames
// and inspects only a few type bytes (ReadyForQueryStatus, ParseStatementName). pgproto3's
// Backend/Frontend decode every message into structs and accept any length by default.
// pgproto3 is used in tests as an independent oracle.
//
// Decoders treat input as untrusted: malformed bodies yield errors wrapping ErrMalformed,
// never panics, and counts declared on the wire are checked against the remaining bytes
// before anything is allocated for them. After a decoding error the fields are unspecified.
//
// Spec: https://www.postgresql.org/docs/current/protocol-message-formats.html
package protocol
