package auth

import (
	"crypto/hmac"
	"fmt"
	"io"
	"strings"
)

// SCRAMClient is the client side of one SCRAM-SHA-256 exchange: the pooler
// logging in to PostgreSQL. Use it once, from one goroutine: ClientFirst,
// ServerFirst, ServerFinal. Any error is final.
type SCRAMClient struct {
	password    string
	hasPassword bool
	clientKey   []byte
	serverKey   []byte

	clientNonce string
	nonceErr    error
	user        string // sent as n=; empty in production, set by RFC vector tests
	state       scramState

	serverSignature []byte
}

// NewSCRAMClientPassword authenticates with a plaintext password (SASLprep
// is applied as PostgreSQL does). rand supplies the client nonce; nil means
// crypto/rand.Reader. A failing rand surfaces as ServerFirst's error.
func NewSCRAMClientPassword(password string, rand io.Reader) *SCRAMClient {
	c := &SCRAMClient{password: password, hasPassword: true}
	c.clientNonce, c.nonceErr = newNonce(randOrDefault(rand))
	return c
}

// NewSCRAMClientKeys authenticates with ClientKey and ServerKey directly
// (passthrough): the salt and iteration count the server sends are
// validated but not needed. The slices are copied.
func NewSCRAMClientKeys(clientKey, serverKey []byte, rand io.Reader) *SCRAMClient {
	c := &SCRAMClient{
		clientKey: append([]byte(nil), clientKey...),
		serverKey: append([]byte(nil), serverKey...),
	}
	c.clientNonce, c.nonceErr = newNonce(randOrDefault(rand))
	return c
}

// ClientFirst returns the client-first-message for SASLInitialResponse. The
// user name is left empty: PostgreSQL takes it from the startup packet.
func (c *SCRAMClient) ClientFirst() []byte {
	if c.state == stateStart {
		c.state = stateFirstDone
	}
	return []byte("n,," + c.clientFirstBare())
}

func (c *SCRAMClient) clientFirstBare() string { return "n=" + c.user + ",r=" + c.clientNonce }

// ServerFirst consumes AuthenticationSASLContinue data and returns the
// client-final-message for SASLResponse. It checks that the server nonce
// extends the client's, the salt decodes and the iteration count is in
// [1, MaxSCRAMIterations].
func (c *SCRAMClient) ServerFirst(msg []byte) ([]byte, error) {
	if c.nonceErr != nil {
		c.state = stateFailed
		return nil, c.nonceErr
	}
	if c.state != stateFirstDone {
		c.state = stateFailed
		return nil, errOutOfOrder
	}
	c.state = stateFailed
	sf, err := parseServerFirst(string(msg))
	if err != nil {
		return nil, fmt.Errorf("parse server-first: %w", err)
	}
	if !strings.HasPrefix(sf.nonce, c.clientNonce) || len(sf.nonce) == len(c.clientNonce) {
		return nil, protoErr("server nonce does not extend the client nonce")
	}
	clientKey, serverKey := c.clientKey, c.serverKey
	if c.hasPassword {
		if clientKey, serverKey, err = keysFromPassword(c.password, sf.salt, sf.iterations); err != nil {
			return nil, err
		}
	}
	if len(clientKey) != scramKeyLen || len(serverKey) != scramKeyLen {
		return nil, fmt.Errorf("client and server keys must be %d bytes", scramKeyLen)
	}
	withoutProof := "c=biws,r=" + sf.nonce // biws = base64("n,,")
	authMessage := c.clientFirstBare() + "," + string(msg) + "," + withoutProof
	proof := xorBytes(clientKey, hmacSHA256(sha256Sum(clientKey), authMessage))
	c.serverSignature = hmacSHA256(serverKey, authMessage)
	c.state = stateFinalPending
	return []byte(withoutProof + ",p=" + b64.EncodeToString(proof)), nil
}

// ServerFinal consumes AuthenticationSASLFinal data and verifies the server
// signature. An "e=" message yields a *ServerError; a wrong signature (the
// server does not know the password) an error wrapping ErrAuthFailed.
func (c *SCRAMClient) ServerFinal(msg []byte) error {
	if c.state != stateFinalPending {
		c.state = stateFailed
		return errOutOfOrder
	}
	c.state = stateFailed
	sig, err := parseServerFinal(string(msg))
	if err != nil {
		return fmt.Errorf("parse server-final: %w", err)
	}
	if !hmac.Equal(sig, c.serverSignature) {
		return fmt.Errorf("server signature mismatch: %w", ErrAuthFailed)
	}
	c.state = stateDone
	return nil
}
