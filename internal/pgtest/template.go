package pgtest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// templateFormat changes whenever the template's contents change, so old
// caches are not reused.
const templateFormat = "pgtest-template-v2"

const (
	templateDone = "complete"
	includeLine  = "\ninclude 'pgtest.conf'\n"
)

// ensureTemplate returns the data directory of an initdb'd template, shared
// by all test processes of the same binaries and user. It is built in a
// private directory and renamed into place, so concurrent test binaries
// either win the rename or use the winner's copy.
func (e *env) ensureTemplate(ctx context.Context) (string, error) {
	version, err := exec.CommandContext(ctx, filepath.Join(e.binDir, "postgres"), "--version").Output()
	if err != nil {
		return "", fmt.Errorf("postgres --version: %w", err)
	}
	sum := sha256.Sum256([]byte(fmt.Sprintf("%s\x00%s\x00%s\x00%d", templateFormat, e.binDir, version, e.uid)))
	final := filepath.Join(e.base, "pgtest-tpl-"+hex.EncodeToString(sum[:6]))
	if templateComplete(final) {
		return filepath.Join(final, "data"), nil
	}
	build, err := os.MkdirTemp(e.base, "pgtest-tplbuild-")
	if err != nil {
		return "", fmt.Errorf("create template dir: %w", err)
	}
	defer os.RemoveAll(build) // a no-op once renamed
	if err := e.buildTemplate(ctx, build); err != nil {
		return "", err
	}
	if err := os.Rename(build, final); err != nil && !templateComplete(final) {
		return "", fmt.Errorf("install template %s (delete it if it is broken): %w", final, err)
	}
	return filepath.Join(final, "data"), nil
}

func (e *env) buildTemplate(ctx context.Context, dir string) error {
	if err := os.Chmod(dir, 0o755); err != nil {
		return fmt.Errorf("chmod template dir: %w", err)
	}
	if err := e.chown(dir); err != nil {
		return err
	}
	data := filepath.Join(dir, "data")
	// 1 MB WAL segments make the template 11 MB smaller, so copies are faster.
	err := e.run(ctx, "initdb", "-D", data, "--no-sync", "-A", "trust", "--auth-local=trust",
		"-E", "UTF8", "--locale=C", "-U", "postgres", "--wal-segsize=1")
	if err != nil {
		return fmt.Errorf("build template: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(data, "postgresql.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("build template: %w", err)
	}
	_, err = f.WriteString(includeLine)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("build template: append include: %w", err)
	}
	if err := e.writeOwned(filepath.Join(data, "pgtest.conf"), "# replaced per cluster\n"); err != nil {
		return fmt.Errorf("build template: %w", err)
	}
	return os.WriteFile(filepath.Join(dir, templateDone), []byte(templateFormat+"\n"), 0o644)
}

func templateComplete(dir string) bool {
	for _, p := range []string{templateDone, "data/global/pg_control", "data/PG_VERSION", "data/pgtest.conf"} {
		if _, err := os.Stat(filepath.Join(dir, p)); err != nil {
			return false
		}
	}
	return true
}

// copyTemplate copies the template data directory to dst, keeping owners
// and modes (the server insists on a 0700 data directory).
func (e *env) copyTemplate(ctx context.Context, dst string) error {
	out, err := exec.CommandContext(ctx, "cp", "-a", e.template, dst).CombinedOutput()
	if err != nil {
		return fmt.Errorf("copy template: %w: %s", err, out)
	}
	return nil
}
