package token

import (
	"crypto/ed25519"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestLoadRSAPublicKey(t *testing.T) {
	t.Parallel()
	k := testKeys()
	dir := t.TempDir()
	pkcs8, err := x509.MarshalPKCS8PrivateKey(k.a)
	require.NoError(t, err)
	privPKCS8 := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: pkcs8})
	privPKCS1 := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(k.a)})
	small := &rsa.PublicKey{N: new(big.Int).Add(new(big.Int).Lsh(big.NewInt(1), 511), big.NewInt(1)), E: 65537}

	tests := []struct {
		name    string
		data    []byte // nil: the file does not exist
		wantErr string // "" means success, with key a
		secret  string // must not appear in the error
	}{
		{name: "PKIX", data: pkixPEM(t, &k.a.PublicKey)},
		{name: "PKCS#1", data: pkcs1PEM(&k.a.PublicKey)},
		{name: "leading text before the block", data: append([]byte("# issued by vault\n"), pkixPEM(t, &k.a.PublicKey)...)},
		{name: "missing file", wantErr: "no such file"},
		{name: "empty file", data: []byte{}, wantErr: "no PEM block found"},
		{name: "not PEM", data: []byte("ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQ user@host\n"), wantErr: "no PEM block found", secret: "AAAAB3NzaC1yc2E"},
		{name: "PKCS#8 private key", data: privPKCS8, wantErr: "holds a private key", secret: pemBody(privPKCS8)},
		{name: "PKCS#1 private key", data: privPKCS1, wantErr: "holds a private key", secret: pemBody(privPKCS1)},
		{name: "Ed25519 public key", data: pkixPEM(t, ed25519.PublicKey(make([]byte, ed25519.PublicKeySize))), wantErr: "key is Ed25519"},
		{name: "EC public key", data: pkixPEM(t, &k.ec.PublicKey), wantErr: "key is ECDSA"},
		{name: "certificate", data: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: []byte{1, 2, 3}}), wantErr: `PEM block "CERTIFICATE" is not a public key`},
		{name: "PKIX block with garbage", data: pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: []byte("garbage-bytes")}), wantErr: "parse PUBLIC KEY block"},
		{name: "PKCS#1 block with garbage", data: pem.EncodeToMemory(&pem.Block{Type: "RSA PUBLIC KEY", Bytes: []byte("garbage-bytes")}), wantErr: "parse RSA PUBLIC KEY block"},
		{name: "PKCS#1 block holding PKIX", data: pem.EncodeToMemory(&pem.Block{Type: "RSA PUBLIC KEY", Bytes: x509DER(t, k)}), wantErr: "parse RSA PUBLIC KEY block"},
		{name: "512-bit key", data: pkcs1PEM(small), wantErr: "RSA key has 512 bits, at least 1024 required"},
		{name: "oversized file", data: []byte(strings.Repeat("A", maxKeyFileSize+1)), wantErr: "file larger than 64 KiB", secret: "AAAA"},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(dir, "missing.pem")
			if tc.data != nil {
				path = writeFile(t, dir, strings.Repeat("k", i+1)+".pem", tc.data)
			}
			key, err := LoadRSAPublicKey(path)
			if tc.wantErr == "" {
				require.NoError(t, err)
				require.True(t, key.Equal(&k.a.PublicKey))
				return
			}
			require.ErrorContains(t, err, tc.wantErr)
			require.ErrorContains(t, err, path, "errors name the file")
			if tc.secret != "" {
				require.NotContains(t, err.Error(), tc.secret, "errors never dump the file")
			}
		})
	}
}

func TestLoadRSAPublicKeyMissingFileWraps(t *testing.T) {
	t.Parallel()
	_, err := LoadRSAPublicKey(filepath.Join(t.TempDir(), "nope.pem"))
	require.ErrorIs(t, err, os.ErrNotExist)
}

func TestLoadRSAPublicKeyDirectory(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	_, err := LoadRSAPublicKey(dir)
	require.ErrorContains(t, err, "load public key "+dir+": ")
}

func TestLoadTalosKeys(t *testing.T) {
	t.Parallel()
	k := testKeys()
	dir := t.TempDir()
	sub := filepath.Join(dir, "sub")
	require.NoError(t, os.Mkdir(sub, 0o700))
	a := writeFile(t, dir, "abc123.pem", pkixPEM(t, &k.a.PublicKey))
	b := writeFile(t, dir, "def456.pem", pkcs1PEM(&k.b.PublicKey))
	dotted := writeFile(t, dir, "key.2024.pem", pkixPEM(t, &k.b.PublicKey))
	noExt := writeFile(t, dir, "plain", pkixPEM(t, &k.a.PublicKey))
	sameKid := writeFile(t, sub, "abc123.key", pkixPEM(t, &k.b.PublicKey))
	emptyKid := writeFile(t, dir, ".pem", pkixPEM(t, &k.a.PublicKey))
	bad := writeFile(t, dir, "bad.pem", []byte("not a key"))

	tests := []struct {
		name    string
		paths   []string
		want    map[string]*rsa.PublicKey
		wantErr []string
	}{
		{name: "none", paths: nil, want: map[string]*rsa.PublicKey{}},
		{name: "two keys", paths: []string{a, b}, want: map[string]*rsa.PublicKey{"abc123": &k.a.PublicKey, "def456": &k.b.PublicKey}},
		{name: "only the last extension is dropped", paths: []string{dotted}, want: map[string]*rsa.PublicKey{"key.2024": &k.b.PublicKey}},
		{name: "no extension", paths: []string{noExt}, want: map[string]*rsa.PublicKey{"plain": &k.a.PublicKey}},
		{name: "same kid in two directories", paths: []string{a, sameKid}, wantErr: []string{`key id "abc123" already given by ` + a, sameKid}},
		{name: "same file twice", paths: []string{a, a}, wantErr: []string{`key id "abc123" already given`}},
		{name: "empty kid", paths: []string{emptyKid}, wantErr: []string{"empty key id", emptyKid}},
		{name: "bad file", paths: []string{a, bad}, wantErr: []string{`talos key id "bad"`, bad, "no PEM block found"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			keys, err := LoadTalosKeys(tc.paths)
			if tc.wantErr != nil {
				for _, s := range tc.wantErr {
					require.ErrorContains(t, err, s)
				}
				require.Nil(t, keys)
				return
			}
			require.NoError(t, err)
			require.NotNil(t, keys)
			require.Len(t, keys, len(tc.want))
			for kid, pub := range tc.want {
				require.Contains(t, keys, kid)
				require.True(t, keys[kid].Equal(pub), kid)
			}
		})
	}
}

// pemBody returns a stretch of the base64 body, which must never be echoed.
func pemBody(block []byte) string {
	lines := strings.Split(string(block), "\n")
	return lines[2]
}
