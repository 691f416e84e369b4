package testcerts

import (
	"crypto/tls"
	"crypto/x509"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSetVerifies(t *testing.T) {
	s, err := New(t.TempDir())
	require.NoError(t, err)
	srv, err := s.Server.TLS()
	require.NoError(t, err)
	leaf, err := x509.ParseCertificate(srv.Certificate[0])
	require.NoError(t, err)
	for _, name := range ServerNames {
		_, err := leaf.Verify(x509.VerifyOptions{Roots: s.CA.Pool(), DNSName: name})
		require.NoError(t, err, name)
	}
	_, err = leaf.Verify(x509.VerifyOptions{Roots: s.WrongCA.Pool()})
	require.Error(t, err, "the wrong CA does not vouch for the server")
	_, err = leaf.Verify(x509.VerifyOptions{Roots: s.CA.Pool(), DNSName: "db.example"})
	require.Error(t, err, "a name the certificate does not carry")

	cli, err := s.WrongCA.Issue("app")
	require.NoError(t, err)
	c, err := tls.LoadX509KeyPair(cli.Cert, cli.Key)
	require.NoError(t, err)
	cl, err := x509.ParseCertificate(c.Certificate[0])
	require.NoError(t, err)
	require.Equal(t, "app", cl.Subject.CommonName)
	_, err = cl.Verify(x509.VerifyOptions{Roots: s.CA.Pool(), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	require.Error(t, err)
}
