package protocol

// Frontend (client → server) message type bytes.
const (
	MsgQuery        byte = 'Q'
	MsgParse        byte = 'P'
	MsgBind         byte = 'B'
	MsgDescribe     byte = 'D'
	MsgExecute      byte = 'E'
	MsgClose        byte = 'C'
	MsgSync         byte = 'S'
	MsgFlush        byte = 'H'
	MsgCopyData     byte = 'd'
	MsgCopyDone     byte = 'c'
	MsgCopyFail     byte = 'f'
	MsgTerminate    byte = 'X'
	MsgFunctionCall byte = 'F'
	// MsgPassword carries PasswordMessage, SASLInitialResponse and SASLResponse; which one
	// is meant depends on the authentication exchange in progress.
	MsgPassword byte = 'p'
)

// Backend (server → client) message type bytes.
const (
	MsgAuthentication           byte = 'R'
	MsgParameterStatus          byte = 'S'
	MsgBackendKeyData           byte = 'K'
	MsgReadyForQuery            byte = 'Z'
	MsgErrorResponse            byte = 'E'
	MsgNoticeResponse           byte = 'N'
	MsgCommandComplete          byte = 'C'
	MsgRowDescription           byte = 'T'
	MsgDataRow                  byte = 'D'
	MsgCopyInResponse           byte = 'G'
	MsgCopyOutResponse          byte = 'H'
	MsgCopyBothResponse         byte = 'W'
	MsgParseComplete            byte = '1'
	MsgBindComplete             byte = '2'
	MsgCloseComplete            byte = '3'
	MsgNoData                   byte = 'n'
	MsgPortalSuspended          byte = 's'
	MsgEmptyQueryResponse       byte = 'I'
	MsgNotificationResponse     byte = 'A'
	MsgParameterDescription     byte = 't'
	MsgNegotiateProtocolVersion byte = 'v'
	MsgFunctionCallResponse     byte = 'V'
)

// Transaction status bytes carried by ReadyForQuery.
const (
	TxIdle    byte = 'I'
	TxInBlock byte = 'T'
	TxFailed  byte = 'E'
)

// Object types of Describe and Close.
const (
	ObjectStatement byte = 'S'
	ObjectPortal    byte = 'P'
)

// Authentication request codes (the int32 that starts an 'R' message body).
const (
	AuthOK                uint32 = 0
	AuthKerberosV5        uint32 = 2
	AuthCleartextPassword uint32 = 3
	AuthMD5Password       uint32 = 5
	AuthGSS               uint32 = 7
	AuthGSSContinue       uint32 = 8
	AuthSSPI              uint32 = 9
	AuthSASL              uint32 = 10
	AuthSASLContinue      uint32 = 11
	AuthSASLFinal         uint32 = 12
)
