package protocol

import (
	"encoding/binary"
	"fmt"
)

// AuthenticationOk reports successful authentication.
type AuthenticationOk struct{}

// AuthenticationCleartextPassword asks for the password in clear text.
type AuthenticationCleartextPassword struct{}

// AuthenticationMD5Password asks for md5(md5(password+user)+Salt).
type AuthenticationMD5Password struct {
	Salt [4]byte
}

// AuthenticationSASL starts SASL and lists the mechanisms the server accepts.
type AuthenticationSASL struct {
	Mechanisms []string
}

// AuthenticationSASLContinue carries a server SASL challenge; Data aliases the body.
type AuthenticationSASLContinue struct {
	Data []byte
}

// AuthenticationSASLFinal carries the server's final SASL message; Data aliases the body.
type AuthenticationSASLFinal struct {
	Data []byte
}

// DecodeAuthentication decodes an 'R' body into *AuthenticationOk,
// *AuthenticationCleartextPassword, *AuthenticationMD5Password, *AuthenticationSASL,
// *AuthenticationSASLContinue or *AuthenticationSASLFinal. Kerberos, GSSAPI and SSPI
// requests return an error wrapping ErrUnsupportedAuthentication.
func DecodeAuthentication(body []byte) (any, error) {
	r := bodyReader{b: body}
	var msg any
	switch code := r.uint32(); {
	case r.err != nil:
	case code == AuthOK:
		msg = &AuthenticationOk{}
	case code == AuthCleartextPassword:
		msg = &AuthenticationCleartextPassword{}
	case code == AuthMD5Password:
		m := &AuthenticationMD5Password{}
		copy(m.Salt[:], r.bytes(4))
		msg = m
	case code == AuthSASL:
		msg = &AuthenticationSASL{Mechanisms: decodeMechanisms(&r)}
	case code == AuthSASLContinue:
		msg = &AuthenticationSASLContinue{Data: r.rest()}
	case code == AuthSASLFinal:
		msg = &AuthenticationSASLFinal{Data: r.rest()}
	case code == AuthKerberosV5, code == AuthGSS, code == AuthGSSContinue, code == AuthSSPI:
		return nil, fmt.Errorf("decode Authentication: %w: request code %d", ErrUnsupportedAuthentication, code)
	default:
		r.err = malformed("unknown authentication request code %d", code)
	}
	if err := r.end(); err != nil {
		return nil, decodeErr("Authentication", err)
	}
	return msg, nil
}

// decodeMechanisms reads NUL-terminated names up to an empty one. At least one is required.
func decodeMechanisms(r *bodyReader) []string {
	var names []string
	for r.err == nil {
		name := r.cstring()
		if name == "" {
			break
		}
		names = append(names, name)
	}
	if r.err == nil && len(names) == 0 {
		r.err = malformed("no SASL mechanisms")
	}
	return names
}

// Encode appends the whole frame.
func (AuthenticationOk) Encode(dst []byte) []byte { return appendAuth(dst, AuthOK, nil) }

// Encode appends the whole frame.
func (AuthenticationCleartextPassword) Encode(dst []byte) []byte {
	return appendAuth(dst, AuthCleartextPassword, nil)
}

// Encode appends the whole frame.
func (m AuthenticationMD5Password) Encode(dst []byte) []byte {
	return appendAuth(dst, AuthMD5Password, m.Salt[:])
}

// Encode appends the whole frame.
func (m AuthenticationSASL) Encode(dst []byte) []byte {
	dst, start := beginFrame(dst, MsgAuthentication)
	dst = binary.BigEndian.AppendUint32(dst, AuthSASL)
	for _, name := range m.Mechanisms {
		dst = appendCString(dst, name)
	}
	return finishFrame(append(dst, 0), start)
}

// Encode appends the whole frame.
func (m AuthenticationSASLContinue) Encode(dst []byte) []byte {
	return appendAuth(dst, AuthSASLContinue, m.Data)
}

// Encode appends the whole frame.
func (m AuthenticationSASLFinal) Encode(dst []byte) []byte {
	return appendAuth(dst, AuthSASLFinal, m.Data)
}

func appendAuth(dst []byte, code uint32, data []byte) []byte {
	dst, start := beginFrame(dst, MsgAuthentication)
	dst = append(binary.BigEndian.AppendUint32(dst, code), data...)
	return finishFrame(dst, start)
}
