package protocol

import "encoding/binary"

// ParameterStatus reports a run-time parameter value ('S').
type ParameterStatus struct {
	Name, Value string
}

// Decode decodes a ParameterStatus body.
func (m *ParameterStatus) Decode(body []byte) error {
	r := bodyReader{b: body}
	m.Name = r.cstring()
	m.Value = r.cstring()
	return decodeErr("ParameterStatus", r.end())
}

// Encode appends the whole frame.
func (m ParameterStatus) Encode(dst []byte) []byte {
	dst, start := beginFrame(dst, MsgParameterStatus)
	dst = appendCString(appendCString(dst, m.Name), m.Value)
	return finishFrame(dst, start)
}

// BackendKeyData identifies the backend for CancelRequest ('K'). Only the 4-byte secret
// of protocol 3.0 is supported.
type BackendKeyData struct {
	ProcessID uint32
	SecretKey uint32
}

// Decode decodes a BackendKeyData body.
func (m *BackendKeyData) Decode(body []byte) error {
	r := bodyReader{b: body}
	m.ProcessID = r.uint32()
	m.SecretKey = r.uint32()
	return decodeErr("BackendKeyData", r.end())
}

// Encode appends the whole frame.
func (m BackendKeyData) Encode(dst []byte) []byte {
	dst = append(dst, MsgBackendKeyData, 0, 0, 0, 12)
	dst = binary.BigEndian.AppendUint32(dst, m.ProcessID)
	return binary.BigEndian.AppendUint32(dst, m.SecretKey)
}

// ReadyForQuery ends a query cycle ('Z'); TxStatus is TxIdle, TxInBlock or TxFailed.
type ReadyForQuery struct {
	TxStatus byte
}

// Decode decodes a ReadyForQuery body, rejecting unknown status bytes.
func (m *ReadyForQuery) Decode(body []byte) error {
	r := bodyReader{b: body}
	m.TxStatus = r.byte()
	if r.err == nil && m.TxStatus != TxIdle && m.TxStatus != TxInBlock && m.TxStatus != TxFailed {
		r.err = malformed("transaction status %q", m.TxStatus)
	}
	return decodeErr("ReadyForQuery", r.end())
}

// Encode appends the whole frame.
func (m ReadyForQuery) Encode(dst []byte) []byte {
	return append(dst, MsgReadyForQuery, 0, 0, 0, 5, m.TxStatus)
}

// NegotiateProtocolVersion tells a client which minor version and which "_pq_." startup
// options the server does not support ('v').
type NegotiateProtocolVersion struct {
	NewestMinor        uint32
	UnsupportedOptions []string
}

// Decode decodes a NegotiateProtocolVersion body.
func (m *NegotiateProtocolVersion) Decode(body []byte) error {
	r := bodyReader{b: body}
	m.NewestMinor = r.uint32()
	n := r.uint32()
	m.UnsupportedOptions = nil
	if n > 0 && r.need(int(n)) { // each option takes at least its NUL
		m.UnsupportedOptions = make([]string, n)
		for i := range m.UnsupportedOptions {
			m.UnsupportedOptions[i] = r.cstring()
		}
	}
	return decodeErr("NegotiateProtocolVersion", r.end())
}

// Encode appends the whole frame.
func (m NegotiateProtocolVersion) Encode(dst []byte) []byte {
	dst, start := beginFrame(dst, MsgNegotiateProtocolVersion)
	dst = binary.BigEndian.AppendUint32(dst, m.NewestMinor)
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(m.UnsupportedOptions)))
	for _, o := range m.UnsupportedOptions {
		dst = appendCString(dst, o)
	}
	return finishFrame(dst, start)
}

// CommandComplete ends a successful command ('C'); Tag is e.g. "SELECT 5" or "INSERT 0 1".
type CommandComplete struct {
	Tag string
}

// Decode decodes a CommandComplete body.
func (m *CommandComplete) Decode(body []byte) error {
	tag, err := CommandTag(body)
	m.Tag = string(tag)
	return decodeErr("CommandComplete", err)
}

// Encode appends the whole frame.
func (m CommandComplete) Encode(dst []byte) []byte {
	dst, start := beginFrame(dst, MsgCommandComplete)
	return finishFrame(appendCString(dst, m.Tag), start)
}

// NotificationResponse delivers a NOTIFY ('A').
type NotificationResponse struct {
	PID     uint32
	Channel string
	Payload string
}

// Decode decodes a NotificationResponse body.
func (m *NotificationResponse) Decode(body []byte) error {
	r := bodyReader{b: body}
	m.PID = r.uint32()
	m.Channel = r.cstring()
	m.Payload = r.cstring()
	return decodeErr("NotificationResponse", r.end())
}

// Encode appends the whole frame.
func (m NotificationResponse) Encode(dst []byte) []byte {
	dst, start := beginFrame(dst, MsgNotificationResponse)
	dst = binary.BigEndian.AppendUint32(dst, m.PID)
	dst = appendCString(appendCString(dst, m.Channel), m.Payload)
	return finishFrame(dst, start)
}
