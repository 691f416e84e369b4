package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/doorman-go/doorman/internal/auth/pam"
	"github.com/doorman-go/doorman/internal/auth/token"
)

// PAMServiceDir is where PAM service files live.
const PAMServiceDir = "/etc/pam.d"

// loadTalos reads general.talos.keys, so that a bad key file fails the
// load (and a reload keeps the running keys) instead of every Talos login.
func (d *decoder) loadTalos(g *General) {
	g.TalosKeys = nil
	t := &g.Talos
	switch {
	case len(t.Keys) == 0 && len(t.Databases) > 0:
		d.failf("general.talos.databases", "has no effect without general.talos.keys")
		return
	case len(t.Keys) == 0:
		return
	case len(t.Databases) == 0:
		d.failf("general.talos.databases", "must list the databases Talos tokens may open")
	}
	if d.lenient {
		return // decoding tests: the files named need not exist
	}
	keys, err := token.LoadTalosKeys(t.Keys)
	if err != nil {
		d.fail("general.talos.keys", err)
		return
	}
	g.TalosKeys = keys
}

// checkUserAuth checks the JWT and PAM settings of a user: the public key
// is read now (and again on every reload, which is how a rotated key file
// is picked up), and both need server_username and server_password, as a
// client that proves itself with a token or to PAM brings nothing that
// could be passed through to PostgreSQL.
func (d *decoder) checkUserAuth(key string, u *User) {
	u.JWTKey = nil
	jwtPath, isJWT := strings.CutPrefix(u.Password, JWTKeyPrefix)
	if u.AuthPamService == "" && !isJWT {
		return
	}
	if u.ServerUsername == "" || u.ServerPassword == "" {
		d.failf(key+".server_username", "and server_password are required with %s: pg_doorman has nothing to pass through to PostgreSQL",
			map[bool]string{true: "auth_pam_service", false: "a jwt-pkey-fpath: password"}[u.AuthPamService != ""])
	}
	if d.lenient {
		return // decoding tests: the files named need not exist
	}
	if u.AuthPamService != "" {
		d.checkPAMService(key+".auth_pam_service", u.AuthPamService)
		return // PAM wins over any password, as the seed orders the methods
	}
	k, err := token.LoadRSAPublicKey(strings.TrimSpace(jwtPath))
	if err != nil {
		d.fail(key+".password", err)
		return
	}
	u.JWTKey = k
}

// checkPAMService refuses auth_pam_service in a build without PAM, and a
// service with no file: PAM would then use /etc/pam.d/other, which on
// Debian is the system login stack, so a typo would let OS users in.
func (d *decoder) checkPAMService(key, service string) {
	if !pam.Available() {
		d.fail(key, fmt.Errorf("%w: %w", ErrNotImplemented, pam.ErrUnavailable))
		return
	}
	if strings.ContainsAny(service, "/\x00") || service == "." || service == ".." {
		d.failf(key, "%q is not a PAM service name", service)
		return
	}
	path := filepath.Join(PAMServiceDir, service)
	if _, err := os.Stat(path); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			err = fmt.Errorf("no PAM service file %s (PAM would fall back to %s/other): %w", path, PAMServiceDir, os.ErrNotExist)
		}
		d.fail(key, err)
	}
}
