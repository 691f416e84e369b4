package protocol

// Messages without a body. Decode rejects a non-empty body.

// Sync ends an extended-query batch ('S').
type Sync struct{}

// Flush asks the server to send pending output ('H').
type Flush struct{}

// Terminate closes the session ('X').
type Terminate struct{}

// CopyDone ends a COPY data stream ('c').
type CopyDone struct{}

// EmptyQueryResponse answers an empty query string ('I').
type EmptyQueryResponse struct{}

// ParseComplete acknowledges Parse ('1').
type ParseComplete struct{}

// BindComplete acknowledges Bind ('2').
type BindComplete struct{}

// CloseComplete acknowledges Close ('3').
type CloseComplete struct{}

// NoData answers Describe of something that returns no rows ('n').
type NoData struct{}

// PortalSuspended reports that Execute stopped at MaxRows ('s').
type PortalSuspended struct{}

func (*Sync) Decode(body []byte) error               { return decodeEmpty("Sync", body) }
func (*Flush) Decode(body []byte) error              { return decodeEmpty("Flush", body) }
func (*Terminate) Decode(body []byte) error          { return decodeEmpty("Terminate", body) }
func (*CopyDone) Decode(body []byte) error           { return decodeEmpty("CopyDone", body) }
func (*EmptyQueryResponse) Decode(body []byte) error { return decodeEmpty("EmptyQueryResponse", body) }
func (*ParseComplete) Decode(body []byte) error      { return decodeEmpty("ParseComplete", body) }
func (*BindComplete) Decode(body []byte) error       { return decodeEmpty("BindComplete", body) }
func (*CloseComplete) Decode(body []byte) error      { return decodeEmpty("CloseComplete", body) }
func (*NoData) Decode(body []byte) error             { return decodeEmpty("NoData", body) }
func (*PortalSuspended) Decode(body []byte) error    { return decodeEmpty("PortalSuspended", body) }

func (Sync) Encode(dst []byte) []byte               { return appendEmpty(dst, MsgSync) }
func (Flush) Encode(dst []byte) []byte              { return appendEmpty(dst, MsgFlush) }
func (Terminate) Encode(dst []byte) []byte          { return appendEmpty(dst, MsgTerminate) }
func (CopyDone) Encode(dst []byte) []byte           { return appendEmpty(dst, MsgCopyDone) }
func (EmptyQueryResponse) Encode(dst []byte) []byte { return appendEmpty(dst, MsgEmptyQueryResponse) }
func (ParseComplete) Encode(dst []byte) []byte      { return appendEmpty(dst, MsgParseComplete) }
func (BindComplete) Encode(dst []byte) []byte       { return appendEmpty(dst, MsgBindComplete) }
func (CloseComplete) Encode(dst []byte) []byte      { return appendEmpty(dst, MsgCloseComplete) }
func (NoData) Encode(dst []byte) []byte             { return appendEmpty(dst, MsgNoData) }
func (PortalSuspended) Encode(dst []byte) []byte    { return appendEmpty(dst, MsgPortalSuspended) }

func decodeEmpty(name string, body []byte) error {
	if len(body) != 0 {
		return decodeErr(name, malformed("%d unexpected body bytes", len(body)))
	}
	return nil
}

func appendEmpty(dst []byte, typ byte) []byte {
	return append(dst, typ, 0, 0, 0, 4)
}
