package auth

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const rfcNonce = rfcClientNonce + rfcServerNonce

func TestSCRAMServerClientFirstInput(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, msg, err string }{
		{"rfc", rfcClientFirst, ""},
		{"libpq style", "n,,n=,r=" + rfcClientNonce, ""},
		{"star user", "n,,n=*,r=" + rfcClientNonce, ""},
		{"y flag", "y,,n=,r=" + rfcClientNonce, ""},
		{"extension after nonce", "n,,n=,r=" + rfcClientNonce + ",x=ext", ""},
		{"empty", "", "too short"},
		{"p flag", "p=tls-server-end-point,,n=,r=abc", "channel binding"},
		{"bad flag", "x,,n=,r=abc", "channel-binding flag"},
		{"no comma after flag", "nn,n=,r=abc", "gs2 header"},
		{"authzid", "n,a=admin,n=,r=abc", "authorization identity"},
		{"junk authzid", "n,b,n=,r=abc", "gs2 header"},
		{"mandatory extension", "n,,m=x,n=,r=abc", "mandatory extension"},
		{"missing user", "n,,r=abc", "expected attribute"},
		{"missing nonce", "n,,n=", "expected attribute"},
		{"empty nonce", "n,,n=,r=", "invalid client nonce"},
		{"nonce with space", "n,,n=,r=a b", "invalid client nonce"},
		{"nonce with high byte", "n,,n=,r=a\xffb", "invalid client nonce"},
		{"trailing comma", "n,,n=,r=abc,", "trailing comma"},
		{"garbage extension", "n,,n=,r=abc,???", "malformed attribute"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := NewSCRAMServer(rfcVerifier(t), nil)
			_, err := s.ClientFirst([]byte(tt.msg))
			if tt.err == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, ErrProtocol)
			require.ErrorContains(t, err, tt.err)
		})
	}
}

func TestSCRAMServerClientFinalInput(t *testing.T) {
	t.Parallel()
	proof := rfcClientFinal[strings.Index(rfcClientFinal, ",p="):]
	tests := []struct {
		name, first, final, err string
	}{
		{"rfc", rfcClientFirst, rfcClientFinal, ""},
		{"y flag needs eSws", "y,,n=user,r=" + rfcClientNonce, "c=biws,r=" + rfcNonce + proof, "channel binding does not match"},
		{"channel binding of another header", rfcClientFirst, "c=eSws,r=" + rfcNonce + proof, "channel binding does not match"},
		{"bad channel binding base64", rfcClientFirst, "c=b!ws,r=" + rfcNonce + proof, "channel binding"},
		{"wrong nonce", rfcClientFirst, "c=biws,r=" + rfcNonce + "x" + proof, "nonce does not match"},
		{"missing proof", rfcClientFirst, "c=biws,r=" + rfcNonce, "missing proof"},
		{"proof not last", rfcClientFirst, "c=biws,r=" + rfcNonce + proof + ",x=y", "not the last"},
		{"short proof", rfcClientFirst, "c=biws,r=" + rfcNonce + ",p=AAAA", "malformed proof"},
		{"empty proof", rfcClientFirst, "c=biws,r=" + rfcNonce + ",p=", "malformed proof"},
		{"missing c", rfcClientFirst, "r=" + rfcNonce + proof, "expected attribute"},
		{"empty", rfcClientFirst, "", "expected attribute"},
		{"garbage", rfcClientFirst, "c=biws,r=" + rfcNonce + ",,p=x", "malformed attribute"},
		// An extension before the proof is allowed but changes the
		// AuthMessage, so the RFC proof no longer verifies.
		{"extension before proof", rfcClientFirst, "c=biws,r=" + rfcNonce + ",x=y" + proof, "invalid client proof"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := rfcServer(t)
			_, err := s.ClientFirst([]byte(tt.first))
			require.NoError(t, err)
			_, err = s.ClientFinal([]byte(tt.final))
			if tt.err == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tt.err)
		})
	}
}

func TestSCRAMClientServerFirstInput(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, msg, err string }{
		{"rfc", rfcServerFirst, ""},
		{"extension", rfcServerFirst + ",x=1", ""},
		{"nonce not extended", "r=" + rfcClientNonce + ",s=" + rfcSalt + ",i=4096", "does not extend"},
		{"foreign nonce", "r=AAAA" + rfcServerNonce + ",s=" + rfcSalt + ",i=4096", "does not extend"},
		{"mandatory extension", "m=x," + rfcServerFirst, "mandatory extension"},
		{"bad nonce", "r=" + rfcClientNonce + "\x01,s=" + rfcSalt + ",i=4096", "invalid server nonce"},
		{"missing salt", "r=" + rfcNonce + ",i=4096", "expected attribute"},
		{"bad salt", "r=" + rfcNonce + ",s=***,i=4096", "malformed salt"},
		{"empty salt", "r=" + rfcNonce + ",s=,i=4096", "malformed salt"},
		{"missing iterations", "r=" + rfcNonce + ",s=" + rfcSalt, "expected attribute"},
		{"zero iterations", "r=" + rfcNonce + ",s=" + rfcSalt + ",i=0", "iteration count"},
		{"negative iterations", "r=" + rfcNonce + ",s=" + rfcSalt + ",i=-1", "iteration count"},
		{"too many iterations", "r=" + rfcNonce + ",s=" + rfcSalt + ",i=1048577", "exceeds the limit"},
		{"overflowing iterations", "r=" + rfcNonce + ",s=" + rfcSalt + ",i=999999999999999999999", "iteration count"},
		{"empty", "", "expected attribute"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := NewSCRAMClientKeys(make([]byte, scramKeyLen), make([]byte, scramKeyLen), nil)
			c.clientNonce = rfcClientNonce
			c.ClientFirst()
			_, err := c.ServerFirst([]byte(tt.msg))
			if tt.err == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, ErrProtocol)
			require.ErrorContains(t, err, tt.err)
		})
	}
}

func TestSCRAMClientServerFinalInput(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, msg, err string }{
		{"rfc", rfcServerFinal, ""},
		{"extension", rfcServerFinal + ",x=1", ""},
		{"server error", "e=other-error", "other-error"},
		{"wrong signature", "v=" + b64.EncodeToString(make([]byte, scramKeyLen)), "signature mismatch"},
		{"short signature", "v=AAAA", "signature mismatch"},
		{"bad base64", "v=%%%", "server signature"},
		{"empty", "", "expected attribute"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := NewSCRAMClientPassword("pencil", nil)
			c.clientNonce, c.user = rfcClientNonce, "user"
			c.ClientFirst()
			_, err := c.ServerFirst([]byte(rfcServerFirst))
			require.NoError(t, err)
			err = c.ServerFinal([]byte(tt.msg))
			if tt.err == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tt.err)
		})
	}
}

// The fuzz targets check "no panic" and that any accepted input leads to a
// consistent state.

func FuzzSCRAMServerClientFirst(f *testing.F) {
	f.Add([]byte(rfcClientFirst))
	f.Add([]byte("y,,n=*,r=abc,x=1"))
	f.Add([]byte("n,a=x,n=,r=abc"))
	v := NewSCRAMVerifier("pencil", []byte("salt"), 1)
	f.Fuzz(func(t *testing.T, msg []byte) {
		s := NewSCRAMServer(v, nil)
		s.serverNonce = rfcServerNonce
		sf, err := s.ClientFirst(msg)
		if err != nil {
			require.Nil(t, sf)
			return
		}
		require.True(t, strings.HasPrefix(string(sf), "r="))
		require.Contains(t, string(sf), rfcServerNonce+",s=c2FsdA==,i=1")
	})
}

func FuzzSCRAMServerClientFinal(f *testing.F) {
	f.Add([]byte(rfcClientFinal))
	f.Add([]byte("c=biws,r=" + rfcNonce + ",x=y,p=AAAA"))
	f.Add([]byte("c=,r=,p="))
	v := rfcVerifier(f)
	f.Fuzz(func(t *testing.T, msg []byte) {
		s := NewSCRAMServer(v, nil)
		s.serverNonce = rfcServerNonce
		_, err := s.ClientFirst([]byte(rfcClientFirst))
		require.NoError(t, err)
		final, err := s.ClientFinal(msg)
		if err != nil {
			require.Nil(t, s.ClientKey())
			return
		}
		require.True(t, strings.HasPrefix(string(final), "v="))
		require.Equal(t, v.StoredKey, sha256Sum(s.ClientKey()))
	})
}

func FuzzSCRAMClientServerFirst(f *testing.F) {
	f.Add([]byte(rfcServerFirst))
	f.Add([]byte("r=" + rfcNonce + ",s=AA==,i=1,x=1"))
	f.Add([]byte("m=1,r=,s=,i="))
	f.Fuzz(func(t *testing.T, msg []byte) {
		// Keys, not a password: the fuzzer must not spend time in PBKDF2.
		c := NewSCRAMClientKeys(make([]byte, scramKeyLen), make([]byte, scramKeyLen), nil)
		c.clientNonce = rfcClientNonce
		c.ClientFirst()
		cf, err := c.ServerFirst(msg)
		if err != nil {
			require.Nil(t, cf)
			return
		}
		require.True(t, strings.HasPrefix(string(cf), "c=biws,r="+rfcClientNonce))
	})
}

func FuzzSCRAMClientServerFinal(f *testing.F) {
	f.Add([]byte(rfcServerFinal))
	f.Add([]byte("e=invalid-proof"))
	f.Add([]byte("v=,x"))
	clientKey, serverKey, err := keysFromPassword("pencil", rfcVerifier(f).Salt, 4096)
	require.NoError(f, err)
	f.Fuzz(func(t *testing.T, msg []byte) {
		c := NewSCRAMClientKeys(clientKey, serverKey, nil)
		c.clientNonce, c.user = rfcClientNonce, "user"
		c.ClientFirst()
		_, err := c.ServerFirst([]byte(rfcServerFirst))
		require.NoError(t, err)
		if c.ServerFinal(msg) == nil {
			require.True(t, strings.HasPrefix(string(msg), rfcServerFinal))
		}
	})
}
