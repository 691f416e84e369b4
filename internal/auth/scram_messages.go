package auth

import (
	"fmt"
	"io"
	"strings"
)

// rawNonceLen is the number of random bytes in a nonce (PostgreSQL's
// SCRAM_RAW_NONCE_LEN); base64 makes it 24 printable characters.
const rawNonceLen = 18

// attrReader walks "k=value,k=value" SCRAM messages. Values cannot contain
// ',' (RFC 5802 forbids it in every attribute we read).
type attrReader struct {
	msg string
	pos int
}

// next returns the next attribute; want != 0 demands that name.
func (r *attrReader) next(want byte) (byte, string, error) {
	rest := r.msg[r.pos:]
	if len(rest) < 2 || rest[1] != '=' || !isAttrName(rest[0]) {
		if want != 0 {
			return 0, "", protoErr("expected attribute %q", want)
		}
		return 0, "", protoErr("malformed attribute")
	}
	name := rest[0]
	if want != 0 && name != want {
		return 0, "", protoErr("expected attribute %q, got %q", want, name)
	}
	val, _, more := strings.Cut(rest[2:], ",")
	r.pos += 2 + len(val)
	if more {
		r.pos++
		if r.pos == len(r.msg) {
			return 0, "", protoErr("trailing comma")
		}
	}
	return name, val, nil
}

func (r *attrReader) done() bool { return r.pos >= len(r.msg) }

// skipExtensions consumes the optional "x=..." attributes at the end.
func (r *attrReader) skipExtensions() error {
	for !r.done() {
		if _, _, err := r.next(0); err != nil {
			return err
		}
	}
	return nil
}

func isAttrName(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }

// validNonce: printable ASCII except ',' (RFC 5802 "printable"), non-empty.
func validNonce(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 0x21 || s[i] > 0x7e || s[i] == ',' {
			return false
		}
	}
	return true
}

func newNonce(rand io.Reader) (string, error) {
	raw := make([]byte, rawNonceLen)
	if _, err := io.ReadFull(rand, raw); err != nil {
		return "", fmt.Errorf("generate nonce: %w", err)
	}
	return b64.EncodeToString(raw), nil
}

func protoErr(format string, args ...any) error {
	return fmt.Errorf("%s: %w", fmt.Sprintf(format, args...), ErrProtocol)
}

var errOutOfOrder = fmt.Errorf("message out of order: %w", ErrProtocol)

// clientFirst is the parsed client-first-message.
type clientFirst struct {
	gs2Header string // "n,,", "y,," or "p=<cb-name>,,"
	cbFlag    byte   // 'n', 'y' or 'p'
	cbName    string // channel binding type after "p="
	bare      string // client-first-message-bare
	nonce     string
}

// parseClientFirst follows PostgreSQL's read_client_first_message; which
// channel-binding flag is acceptable is the server's decision
// (SCRAMServer.checkChannelBinding).
func parseClientFirst(msg string) (clientFirst, error) {
	var cf clientFirst
	if len(msg) < 3 {
		return cf, protoErr("client-first message too short")
	}
	rest := msg[1:]
	switch cf.cbFlag = msg[0]; cf.cbFlag {
	case 'n', 'y':
	case 'p':
		if rest[0] != '=' {
			return cf, protoErr("malformed gs2 header")
		}
		name, _, ok := strings.Cut(rest[1:], ",")
		if !ok || name == "" {
			return cf, protoErr("malformed gs2 header")
		}
		cf.cbName = name
		rest = rest[1+len(name):]
	default:
		return cf, protoErr("unexpected channel-binding flag %q", msg[0])
	}
	if len(rest) < 2 || rest[0] != ',' {
		return cf, protoErr("malformed gs2 header")
	}
	if strings.HasPrefix(rest[1:], "a=") {
		return cf, protoErr("authorization identity is not supported")
	}
	if rest[1] != ',' {
		return cf, protoErr("malformed gs2 header")
	}
	headerLen := len(msg) - len(rest) + 2
	cf.gs2Header, cf.bare = msg[:headerLen], msg[headerLen:]
	if strings.HasPrefix(cf.bare, "m=") {
		return cf, protoErr("mandatory extension is not supported")
	}
	r := attrReader{msg: cf.bare}
	if _, _, err := r.next('n'); err != nil { // user name: ignored, as by PostgreSQL
		return cf, err
	}
	_, nonce, err := r.next('r')
	if err != nil {
		return cf, err
	}
	if !validNonce(nonce) {
		return cf, protoErr("invalid client nonce")
	}
	cf.nonce = nonce
	return cf, r.skipExtensions()
}

// clientFinal is the parsed client-final-message.
type clientFinal struct {
	channelBinding []byte
	nonce          string
	withoutProof   string
	proof          []byte
}

// parseClientFinal follows PostgreSQL's read_client_final_message: c=, r=,
// optional extensions, then p= which must come last.
func parseClientFinal(msg string) (clientFinal, error) {
	var cf clientFinal
	r := attrReader{msg: msg}
	_, cb, err := r.next('c')
	if err != nil {
		return cf, err
	}
	if cf.channelBinding, err = decodeB64(cb); err != nil {
		return cf, protoErr("channel binding: %v", err)
	}
	if _, cf.nonce, err = r.next('r'); err != nil {
		return cf, err
	}
	for {
		start := r.pos
		if r.done() {
			return cf, protoErr("missing proof")
		}
		name, val, err := r.next(0)
		if err != nil {
			return cf, err
		}
		if name != 'p' {
			continue
		}
		if !r.done() {
			return cf, protoErr("proof is not the last attribute")
		}
		cf.withoutProof = strings.TrimSuffix(msg[:start], ",")
		if cf.proof, err = decodeB64(val); err != nil || len(cf.proof) != scramKeyLen {
			return cf, protoErr("malformed proof")
		}
		return cf, nil
	}
}

// serverFirst is the parsed server-first-message.
type serverFirst struct {
	nonce      string
	salt       []byte
	iterations int
}

func parseServerFirst(msg string) (serverFirst, error) {
	var sf serverFirst
	if strings.HasPrefix(msg, "m=") {
		return sf, protoErr("mandatory extension is not supported")
	}
	r := attrReader{msg: msg}
	_, nonce, err := r.next('r')
	if err != nil {
		return sf, err
	}
	if !validNonce(nonce) {
		return sf, protoErr("invalid server nonce")
	}
	sf.nonce = nonce
	_, salt, err := r.next('s')
	if err != nil {
		return sf, err
	}
	if sf.salt, err = decodeB64(salt); err != nil || len(sf.salt) == 0 {
		return sf, protoErr("malformed salt")
	}
	_, iter, err := r.next('i')
	if err != nil {
		return sf, err
	}
	if sf.iterations, err = parseIterations(iter); err != nil {
		return sf, protoErr("%v", err)
	}
	if sf.iterations > MaxSCRAMIterations {
		return sf, protoErr("iteration count %d exceeds the limit %d", sf.iterations, MaxSCRAMIterations)
	}
	return sf, r.skipExtensions()
}

// ServerError is returned (wrapping ErrAuthFailed) when the server-final
// message carries "e=<value>" (RFC 5802 server-error-value).
type ServerError struct{ Value string }

func (e *ServerError) Error() string { return "scram server error: " + e.Value }

func (e *ServerError) Unwrap() error { return ErrAuthFailed }

// parseServerFinal returns the decoded server signature.
func parseServerFinal(msg string) ([]byte, error) {
	if val, ok := strings.CutPrefix(msg, "e="); ok {
		val, _, _ = strings.Cut(val, ",")
		return nil, &ServerError{Value: val}
	}
	r := attrReader{msg: msg}
	_, v, err := r.next('v')
	if err != nil {
		return nil, err
	}
	sig, err := decodeB64(v)
	if err != nil {
		return nil, protoErr("server signature: %v", err)
	}
	if err := r.skipExtensions(); err != nil {
		return nil, err
	}
	return sig, nil
}
