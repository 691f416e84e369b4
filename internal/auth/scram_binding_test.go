package auth

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// clientFinalFor computes a client-final-message for the exchange so far,
// with the channel binding attribute cbind (base64 of gs2 header + data).
func clientFinalFor(t *testing.T, v SCRAMVerifier, clientFirstBare, serverFirst, cbind string) string {
	t.Helper()
	clientKey, _, err := keysFromPassword("pencil", v.Salt, v.Iterations)
	require.NoError(t, err)
	nonce := strings.TrimPrefix(strings.Split(serverFirst, ",")[0], "r=")
	withoutProof := "c=" + cbind + ",r=" + nonce
	auth := clientFirstBare + "," + serverFirst + "," + withoutProof
	proof := xorBytes(clientKey, hmacSHA256(v.StoredKey, auth))
	return withoutProof + ",p=" + b64.EncodeToString(proof)
}

func TestSCRAMChannelBinding(t *testing.T) {
	t.Parallel()
	endPoint := []byte("0123456789abcdef0123456789abcdef")
	const bare = "n=,r=" + rfcClientNonce
	pHeader := "p=" + ChannelBindingType + ",,"
	tests := []struct {
		name     string
		cbData   []byte // nil: client not on TLS
		plus     bool
		first    string
		cbind    string // c= attribute
		firstErr string
		finalErr string
	}{
		{name: "PLUS with the right data", cbData: endPoint, plus: true, first: pHeader + bare,
			cbind: b64.EncodeToString(append([]byte(pHeader), endPoint...))},
		{name: "PLUS with another certificate's data", cbData: endPoint, plus: true, first: pHeader + bare,
			cbind: b64.EncodeToString(append([]byte(pHeader), "ffffffffffffffffffffffffffffffff"...)), finalErr: "channel binding does not match"},
		{name: "PLUS with the header only", cbData: endPoint, plus: true, first: pHeader + bare,
			cbind: b64.EncodeToString([]byte(pHeader)), finalErr: "channel binding does not match"},
		{name: "PLUS without binding data", cbData: endPoint, plus: true, first: "n,," + bare, firstErr: "does not include channel binding data"},
		{name: "PLUS with y", cbData: endPoint, plus: true, first: "y,," + bare, firstErr: "does not include channel binding data"},
		{name: "PLUS with another binding type", cbData: endPoint, plus: true, first: "p=tls-unique,," + bare, firstErr: `unsupported SCRAM channel-binding type "tls-unique"`},
		{name: "plain mechanism with p", cbData: endPoint, first: pHeader + bare, firstErr: "without channel binding, but the SCRAM message includes"},
		{name: "plain mechanism on TLS with n", cbData: endPoint, first: "n,," + bare, cbind: "biws"},
		{name: "y on TLS is a downgrade", cbData: endPoint, first: "y,," + bare, firstErr: "negotiation error"},
		{name: "y without TLS", first: "y,," + bare, cbind: "eSws"},
		{name: "p without TLS", first: pHeader + bare, firstErr: "without channel binding"},
		{name: "p= without a name", cbData: endPoint, plus: true, first: "p=,," + bare, firstErr: "malformed gs2 header"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			v := rfcVerifier(t)
			s := NewSCRAMServer(v, nil)
			s.ChannelBinding(tt.cbData, tt.plus)
			sf, err := s.ClientFirst([]byte(tt.first))
			if tt.firstErr != "" {
				require.ErrorIs(t, err, ErrProtocol)
				require.ErrorContains(t, err, tt.firstErr)
				return
			}
			require.NoError(t, err)
			_, err = s.ClientFinal([]byte(clientFinalFor(t, v, bare, string(sf), tt.cbind)))
			if tt.finalErr != "" {
				require.ErrorContains(t, err, tt.finalErr)
				require.Nil(t, s.ClientKey())
				return
			}
			require.NoError(t, err)
			require.NotNil(t, s.ClientKey())
		})
	}
}
