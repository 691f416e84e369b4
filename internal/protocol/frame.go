package protocol

import "encoding/binary"

// headerLen is the type byte plus the int32 length.
const headerLen = 5

// HeaderLen is the length of a message header: the type byte and the int32
// length.
const HeaderLen = headerLen

// Frame is one complete wire message: Frame[0] is the type byte, Frame[1:5] the big-endian
// length (including itself), Frame[5:] the body. A Frame returned by Reader aliases the
// reader's buffer and is valid only until the next call on that Reader.
type Frame []byte

// Type returns the message type byte.
func (f Frame) Type() byte { return f[0] }

// Body returns the message body (everything after the 5-byte header).
func (f Frame) Body() []byte { return f[headerLen:] }

// ReadyForQueryStatus returns the transaction status (TxIdle, TxInBlock, TxFailed) of a
// ReadyForQuery frame, or 0 if f is not a well-formed ReadyForQuery.
func ReadyForQueryStatus(f Frame) byte {
	if len(f) != headerLen+1 || f[0] != MsgReadyForQuery || binary.BigEndian.Uint32(f[1:]) != 5 {
		return 0
	}
	switch s := f[headerLen]; s {
	case TxIdle, TxInBlock, TxFailed:
		return s
	}
	return 0
}

// ParseStatementName returns the statement name of a Parse body without decoding the rest;
// empty means the unnamed statement. The result aliases body.
func ParseStatementName(body []byte) ([]byte, error) {
	r := bodyReader{b: body}
	name := r.cbytes()
	return name, r.err
}

// BindNames returns the portal and statement names of a Bind body without decoding the
// parameters. The results alias body.
func BindNames(body []byte) (portal, statement []byte, err error) {
	r := bodyReader{b: body}
	portal = r.cbytes()
	statement = r.cbytes()
	return portal, statement, r.err
}

// ObjectName returns the object type (ObjectStatement or ObjectPortal) and name of a
// Describe or Close body. The name aliases body.
func ObjectName(body []byte) (objectType byte, name []byte, err error) {
	r := bodyReader{b: body}
	objectType = r.byte()
	name = r.cbytes()
	if err := r.end(); err != nil {
		return 0, nil, err
	}
	if objectType != ObjectStatement && objectType != ObjectPortal {
		return 0, nil, malformed("object type %q", objectType)
	}
	return objectType, name, nil
}

// CommandTag returns the tag of a CommandComplete body (e.g. "INSERT 0 1") without the
// terminating NUL. The result aliases body.
func CommandTag(body []byte) ([]byte, error) {
	r := bodyReader{b: body}
	tag := r.cbytes()
	return tag, r.end()
}
