package auth

import (
	"bytes"
	"errors"
	"testing"
	"testing/iotest"

	"github.com/stretchr/testify/require"
)

// RFC 7677 section 3 test vector.
const (
	rfcClientNonce = "rOprNGfwEbeRWgbNEkqO"
	rfcServerNonce = "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"
	rfcSalt        = "W22ZaJ0SNY7soEsUEjb6gQ=="
	rfcClientFirst = "n,,n=user,r=rOprNGfwEbeRWgbNEkqO"
	rfcServerFirst = "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
	rfcClientFinal = "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
	rfcServerFinal = "v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="
)

func rfcVerifier(t testing.TB) SCRAMVerifier {
	salt, err := decodeB64(rfcSalt)
	require.NoError(t, err)
	return NewSCRAMVerifier("pencil", salt, 4096)
}

func rfcServer(t testing.TB) *SCRAMServer {
	s := NewSCRAMServer(rfcVerifier(t), nil)
	s.serverNonce = rfcServerNonce
	return s
}

func TestSCRAMServerRFC7677(t *testing.T) {
	t.Parallel()
	s := rfcServer(t)
	require.Nil(t, s.ClientKey())
	sf, err := s.ClientFirst([]byte(rfcClientFirst))
	require.NoError(t, err)
	require.Equal(t, rfcServerFirst, string(sf))
	final, err := s.ClientFinal([]byte(rfcClientFinal))
	require.NoError(t, err)
	require.Equal(t, rfcServerFinal, string(final))

	clientKey, _, err := keysFromPassword("pencil", rfcVerifier(t).Salt, 4096)
	require.NoError(t, err)
	require.Equal(t, clientKey, s.ClientKey())
}

func TestSCRAMClientRFC7677(t *testing.T) {
	t.Parallel()
	c := NewSCRAMClientPassword("pencil", nil)
	c.clientNonce, c.user = rfcClientNonce, "user"
	require.Equal(t, rfcClientFirst, string(c.ClientFirst()))
	cf, err := c.ServerFirst([]byte(rfcServerFirst))
	require.NoError(t, err)
	require.Equal(t, rfcClientFinal, string(cf))
	require.NoError(t, c.ServerFinal([]byte(rfcServerFinal)))
}

// exchange runs a client against a server and returns the first error.
func exchange(c *SCRAMClient, s *SCRAMServer) error {
	sf, err := s.ClientFirst(c.ClientFirst())
	if err != nil {
		return err
	}
	cf, err := c.ServerFirst(sf)
	if err != nil {
		return err
	}
	final, err := s.ClientFinal(cf)
	if err != nil {
		return err
	}
	return c.ServerFinal(final)
}

func TestSCRAMExchange(t *testing.T) {
	t.Parallel()
	v, err := ParseSCRAMVerifier(pgSCRAMUser)
	require.NoError(t, err)
	other := NewSCRAMVerifier("pencil", []byte("another salt"), 4096)

	// Passthrough: the pooler's server side recovers the ClientKey, which
	// with the verifier's ServerKey logs in to a backend with the same
	// verifier.
	front := NewSCRAMServer(v, nil)
	require.NoError(t, exchange(NewSCRAMClientPassword("pencil", nil), front))
	recovered := front.ClientKey()
	require.Len(t, recovered, scramKeyLen)

	tests := []struct {
		name    string
		client  *SCRAMClient
		server  SCRAMVerifier
		wantErr error
	}{
		{name: "password", client: NewSCRAMClientPassword("pencil", nil), server: v},
		{name: "password, other salt", client: NewSCRAMClientPassword("pencil", nil), server: other},
		{name: "wrong password", client: NewSCRAMClientPassword("pencil2", nil), server: v, wantErr: ErrAuthFailed},
		{name: "empty password", client: NewSCRAMClientPassword("", nil), server: v, wantErr: ErrAuthFailed},
		{name: "passthrough keys", client: NewSCRAMClientKeys(recovered, v.ServerKey, nil), server: v},
		{name: "passthrough to a different verifier", client: NewSCRAMClientKeys(recovered, v.ServerKey, nil), server: other, wantErr: ErrAuthFailed},
		{name: "keys of wrong length", client: NewSCRAMClientKeys(recovered[:8], v.ServerKey, nil), server: v, wantErr: errAny},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := NewSCRAMServer(tt.server, nil)
			err := exchange(tt.client, s)
			switch tt.wantErr {
			case nil:
				require.NoError(t, err)
				require.Equal(t, sha256Sum(s.ClientKey()), tt.server.StoredKey)
			case errAny:
				require.Error(t, err)
			default:
				require.ErrorIs(t, err, tt.wantErr)
				require.Nil(t, s.ClientKey())
			}
		})
	}
}

var errAny = errors.New("any error")

func TestSCRAMClientDetectsImpostorServer(t *testing.T) {
	t.Parallel()
	// A server that knows StoredKey (and so accepts the proof) but not the
	// real ServerKey must be caught by the signature check.
	v := rfcVerifier(t)
	fake := v
	fake.ServerKey = bytes.Repeat([]byte{1}, scramKeyLen)
	err := exchange(NewSCRAMClientPassword("pencil", nil), NewSCRAMServer(fake, nil))
	require.ErrorIs(t, err, ErrAuthFailed)
	require.ErrorContains(t, err, "server signature")
}

func TestSCRAMClientServerFinalError(t *testing.T) {
	t.Parallel()
	c := NewSCRAMClientPassword("pencil", nil)
	c.clientNonce, c.user = rfcClientNonce, "user"
	c.ClientFirst()
	_, err := c.ServerFirst([]byte(rfcServerFirst))
	require.NoError(t, err)
	err = c.ServerFinal([]byte("e=invalid-proof"))
	require.ErrorIs(t, err, ErrAuthFailed)
	var se *ServerError
	require.ErrorAs(t, err, &se)
	require.Equal(t, "invalid-proof", se.Value)
}

func TestSCRAMOutOfOrder(t *testing.T) {
	t.Parallel()
	s := rfcServer(t)
	_, err := s.ClientFinal([]byte(rfcClientFinal))
	require.ErrorIs(t, err, ErrProtocol)
	_, err = s.ClientFirst([]byte(rfcClientFirst))
	require.ErrorIs(t, err, ErrProtocol, "a failed server stays failed")

	s = rfcServer(t)
	_, err = s.ClientFirst([]byte(rfcClientFirst))
	require.NoError(t, err)
	_, err = s.ClientFirst([]byte(rfcClientFirst))
	require.ErrorIs(t, err, ErrProtocol)

	c := NewSCRAMClientPassword("pencil", nil)
	_, err = c.ServerFirst([]byte(rfcServerFirst))
	require.ErrorIs(t, err, ErrProtocol)
	c = NewSCRAMClientPassword("pencil", nil)
	require.ErrorIs(t, c.ServerFinal([]byte(rfcServerFinal)), ErrProtocol)
}

func TestSCRAMWrongProofLeavesServerFailed(t *testing.T) {
	t.Parallel()
	s := rfcServer(t)
	_, err := s.ClientFirst([]byte(rfcClientFirst))
	require.NoError(t, err)
	bad := []byte(rfcClientFinal[:len(rfcClientFinal)-5] + "AAAA=")
	_, err = s.ClientFinal(bad)
	require.ErrorIs(t, err, ErrAuthFailed)
	_, err = s.ClientFinal([]byte(rfcClientFinal))
	require.ErrorIs(t, err, ErrProtocol, "no second attempt")
	require.Nil(t, s.ClientKey())
}

func TestSCRAMNonceFromRand(t *testing.T) {
	t.Parallel()
	c := NewSCRAMClientPassword("pencil", bytes.NewReader(make([]byte, rawNonceLen)))
	require.Equal(t, "n,,n=,r=AAAAAAAAAAAAAAAAAAAAAAAA", string(c.ClientFirst()))

	s := NewSCRAMServer(rfcVerifier(t), bytes.NewReader(bytes.Repeat([]byte{0xff}, rawNonceLen)))
	sf, err := s.ClientFirst([]byte("n,,n=,r=abc"))
	require.NoError(t, err)
	require.Equal(t, "r=abc////////////////////////,s="+rfcSalt+",i=4096", string(sf))

	c = NewSCRAMClientPassword("pencil", iotest.ErrReader(errors.New("no entropy")))
	c.ClientFirst()
	_, err = c.ServerFirst([]byte(rfcServerFirst))
	require.ErrorContains(t, err, "no entropy")

	s = NewSCRAMServer(rfcVerifier(t), iotest.ErrReader(errors.New("no entropy")))
	_, err = s.ClientFirst([]byte(rfcClientFirst))
	require.ErrorContains(t, err, "no entropy")
}
