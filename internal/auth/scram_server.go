package auth

import (
	"crypto/hmac"
	"crypto/rand"
	"fmt"
	"io"
)

type scramState int

const (
	stateStart scramState = iota
	stateFirstDone
	stateFinalPending // client only: client-final sent, server-final awaited
	stateDone
	stateFailed
)

// SCRAMServer is the server side of one SCRAM-SHA-256 exchange: the pooler
// checking a client's proof against a stored verifier. Use it once, from
// one goroutine: ClientFirst, then ClientFinal. Any error is final.
type SCRAMServer struct {
	verifier SCRAMVerifier
	rand     io.Reader
	state    scramState

	// Channel binding (RFC 5802 section 6, RFC 5929): cbData is the
	// tls-server-end-point data of the connection, nil when the client is
	// not on TLS (or the certificate has none); plus is set when the
	// client chose SCRAM-SHA-256-PLUS.
	cbData []byte
	plus   bool

	serverNonce     string // set in tests to reproduce RFC vectors
	gs2Header       string
	clientFirstBare string
	serverFirst     string
	nonce           string // client nonce + server nonce
	clientKey       []byte
}

// NewSCRAMServer prepares an exchange against v. rand supplies the server
// nonce; nil means crypto/rand.Reader.
func NewSCRAMServer(v SCRAMVerifier, rand io.Reader) *SCRAMServer {
	return &SCRAMServer{verifier: v, rand: randOrDefault(rand)}
}

// ChannelBinding tells the exchange that the client is on TLS with
// tls-server-end-point data endPoint (so SCRAM-SHA-256-PLUS was offered)
// and whether it chose SCRAMPlusMechanism. Call it before ClientFirst.
func (s *SCRAMServer) ChannelBinding(endPoint []byte, plus bool) {
	s.cbData, s.plus = endPoint, plus
}

// checkChannelBinding applies PostgreSQL's rules (read_client_first_message)
// to the client's gs2 flag: PLUS needs "p=tls-server-end-point"; "p" needs
// PLUS; "y" (the client thinks we cannot bind) is a downgrade when we can.
func (s *SCRAMServer) checkChannelBinding(cf clientFirst) error {
	switch cf.cbFlag {
	case 'p':
		if !s.plus {
			return protoErr("the client selected %s without channel binding, but the SCRAM message includes channel binding data", SCRAMMechanism)
		}
		if cf.cbName != ChannelBindingType {
			return protoErr("unsupported SCRAM channel-binding type %q", cf.cbName)
		}
		return nil
	case 'y':
		if s.cbData != nil && !s.plus {
			return protoErr("SCRAM channel binding negotiation error: the client supports SCRAM channel binding but thinks the server does not, and this server does support it")
		}
	}
	if s.plus {
		return protoErr("the client selected %s, but the SCRAM message does not include channel binding data", SCRAMPlusMechanism)
	}
	return nil
}

// ClientFirst consumes the data of SASLInitialResponse (client-first-message)
// and returns the server-first-message for AuthenticationSASLContinue.
func (s *SCRAMServer) ClientFirst(msg []byte) ([]byte, error) {
	if s.state != stateStart {
		s.state = stateFailed
		return nil, errOutOfOrder
	}
	s.state = stateFailed
	cf, err := parseClientFirst(string(msg))
	if err != nil {
		return nil, fmt.Errorf("parse client-first: %w", err)
	}
	serverNonce := s.serverNonce
	if serverNonce == "" {
		if serverNonce, err = newNonce(s.rand); err != nil {
			return nil, err
		}
	}
	if err := s.checkChannelBinding(cf); err != nil {
		return nil, err
	}
	s.gs2Header, s.clientFirstBare = cf.gs2Header, cf.bare
	s.nonce = cf.nonce + serverNonce
	s.serverFirst = fmt.Sprintf("r=%s,s=%s,i=%d", s.nonce, b64.EncodeToString(s.verifier.Salt), s.verifier.Iterations)
	s.state = stateFirstDone
	return []byte(s.serverFirst), nil
}

// ClientFinal consumes the data of SASLResponse (client-final-message),
// verifies the proof and returns the server-final-message for
// AuthenticationSASLFinal. A wrong proof yields an error wrapping
// ErrAuthFailed; the caller then sends ErrorResponse 28P01, as PostgreSQL
// does, rather than an "e=" message.
func (s *SCRAMServer) ClientFinal(msg []byte) ([]byte, error) {
	if s.state != stateFirstDone {
		s.state = stateFailed
		return nil, errOutOfOrder
	}
	s.state = stateFailed
	cf, err := parseClientFinal(string(msg))
	if err != nil {
		return nil, fmt.Errorf("parse client-final: %w", err)
	}
	want := s.gs2Header
	if s.plus {
		want += string(s.cbData)
	}
	if !hmac.Equal(cf.channelBinding, []byte(want)) {
		return nil, protoErr("channel binding does not match the gs2 header")
	}
	if cf.nonce != s.nonce {
		return nil, protoErr("nonce does not match")
	}
	if len(s.verifier.StoredKey) != scramKeyLen || len(s.verifier.ServerKey) != scramKeyLen {
		return nil, fmt.Errorf("verifier has no keys: %w", ErrAuthFailed)
	}
	authMessage := s.clientFirstBare + "," + s.serverFirst + "," + cf.withoutProof
	clientSignature := hmacSHA256(s.verifier.StoredKey, authMessage)
	clientKey := xorBytes(cf.proof, clientSignature)
	if !hmac.Equal(sha256Sum(clientKey), s.verifier.StoredKey) {
		return nil, fmt.Errorf("invalid client proof: %w", ErrAuthFailed)
	}
	s.clientKey = clientKey
	s.state = stateDone
	serverSignature := hmacSHA256(s.verifier.ServerKey, authMessage)
	return []byte("v=" + b64.EncodeToString(serverSignature)), nil
}

// ClientKey returns the ClientKey recovered from a verified proof (a copy),
// or nil before ClientFinal succeeded. With the verifier's ServerKey it lets
// NewSCRAMClientKeys log in to a PostgreSQL that stores the same verifier.
func (s *SCRAMServer) ClientKey() []byte {
	if s.state != stateDone {
		return nil
	}
	return append([]byte(nil), s.clientKey...)
}

func randOrDefault(r io.Reader) io.Reader {
	if r == nil {
		return rand.Reader
	}
	return r
}
