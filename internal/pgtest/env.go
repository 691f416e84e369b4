package pgtest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// env is what every cluster of this process shares. It is process-wide by
// nature (one binary directory, one OS user, one temp root, one template),
// so it is built once; only the count of live clusters changes afterwards.
type env struct {
	binDir   string
	cred     *syscall.Credential // nil: run server programs as ourselves
	uid, gid int                 // owner of cluster files
	base     string              // parent of all pgtest directories
	root     string              // this process's directory: <base>/pgtest-<pid>-*
	template string              // data directory to copy for new clusters

	mu   sync.Mutex // guards live and the existence of root
	live int        // clusters with files under root
}

var (
	envOnce   sync.Once
	envResult *env
	envErr    error
)

// getEnv returns the process environment, building it on first use.
func getEnv() (*env, error) {
	envOnce.Do(func() { envResult, envErr = buildEnv() })
	return envResult, envErr
}

func buildEnv() (*env, error) {
	binDir, err := FindBinDir()
	if err != nil {
		return nil, err
	}
	e := &env{binDir: binDir, uid: os.Getuid(), gid: os.Getgid()}
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			return nil, fmt.Errorf("running as root needs the postgres OS user: %w", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		e.uid, e.gid = uid, gid
		e.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	}
	e.base = os.TempDir()
	if e.cred != nil && !traversable(e.base) {
		e.base = "/tmp" // the postgres user cannot reach $TMPDIR
	}
	CleanupStale()
	e.root, err = os.MkdirTemp(e.base, fmt.Sprintf("pgtest-%d-", os.Getpid()))
	if err != nil {
		return nil, fmt.Errorf("create pgtest root: %w", err)
	}
	_ = os.Remove(e.root) // only the name is kept; acquireRoot makes it
	if e.template, err = e.ensureTemplate(context.Background()); err != nil {
		return nil, err
	}
	return e, nil
}

// traversable reports whether every directory from / to dir lets others
// search it, so the postgres user can reach files below dir.
func traversable(dir string) bool {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return false
	}
	for {
		st, err := os.Stat(dir)
		if err != nil || st.Mode().Perm()&0o001 == 0 {
			return false
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return true
		}
		dir = parent
	}
}

// acquireRoot makes sure root exists for one more cluster; releaseRoot
// removes it with the last one, so finished test binaries leave no trace.
func (e *env) acquireRoot() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := os.Mkdir(e.root, 0o755); err != nil && !os.IsExist(err) {
		return fmt.Errorf("create pgtest root: %w", err)
	}
	if err := os.Chmod(e.root, 0o755); err != nil {
		return fmt.Errorf("chmod pgtest root: %w", err)
	}
	e.live++
	return nil
}

func (e *env) releaseRoot() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.live--; e.live == 0 {
		_ = os.Remove(e.root) // fails, as it should, if something was kept
	}
}

// mkdirOwned makes dir and gives it to the server's OS user.
func (e *env) mkdirOwned(dir string, perm os.FileMode) error {
	if err := os.Mkdir(dir, perm); err != nil {
		return fmt.Errorf("mkdir: %w", err)
	}
	if err := os.Chmod(dir, perm); err != nil { // undo the umask
		return fmt.Errorf("chmod %s: %w", dir, err)
	}
	return e.chown(dir)
}

func (e *env) chown(path string) error {
	if e.cred == nil {
		return nil
	}
	if err := os.Chown(path, e.uid, e.gid); err != nil {
		return fmt.Errorf("chown %s: %w", path, err)
	}
	return nil
}

// writeOwned writes a file readable by everyone and owned by the server user.
func (e *env) writeOwned(path, content string) error {
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", filepath.Base(path), err)
	}
	return e.chown(path)
}

// command prepares a server program to run as the server's OS user with a
// clean environment, so PG* variables of the caller cannot leak in.
func (e *env) command(ctx context.Context, prog string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, filepath.Join(e.binDir, prog), args...)
	cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C", "LC_ALL=C"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: e.cred}
	return cmd
}

// run runs a server program and returns its error with its output.
func (e *env) run(ctx context.Context, prog string, args ...string) error {
	out, err := e.command(ctx, prog, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %w: %s", prog, strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}
