package harness

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"strconv"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// stopTimeout bounds a pooler's graceful stop before SIGKILL.
const stopTimeout = 15 * time.Second

// readyTimeout bounds waiting for a pooler to accept a login.
const readyTimeout = 30 * time.Second

// pollInterval is how often a condition is re-checked.
const pollInterval = 50 * time.Millisecond

// process is a child pooler process.
type process struct {
	name string
	cmd  *exec.Cmd
	done chan error // receives Wait's result once
}

// startProcess starts prog with output appended to logPath. When cred is
// set the child runs as that user. The child is killed if we die.
func startProcess(name, logPath string, cred *syscall.Credential, prog string, args ...string) (*process, error) {
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open %s log: %w", name, err)
	}
	defer logFile.Close() // the child has its own descriptor
	cmd := exec.Command(prog, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = childAttr(cred)
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &process{name: name, cmd: cmd, done: make(chan error, 1)}
	go func() { p.done <- cmd.Wait() }()
	return p, nil
}

// PID is the child's process id.
func (p *process) PID() int { return p.cmd.Process.Pid }

// waitLogin polls until dsn accepts a login, or the process exits, or
// readyTimeout passes.
func (p *process) waitLogin(ctx context.Context, dsn string) error {
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	var last error
	for {
		conn, err := pgconn.Connect(ctx, dsn)
		if err == nil {
			return conn.Close(ctx)
		}
		last = err
		select {
		case err := <-p.done:
			p.done <- err
			if err == nil {
				err = errors.New("exit status 0")
			}
			return fmt.Errorf("%s exited while starting: %w", p.name, err)
		case <-ctx.Done():
			return fmt.Errorf("%s not ready after %s: %w", p.name, readyTimeout, last)
		case <-time.After(pollInterval):
		}
	}
}

// stop sends SIGTERM, then SIGKILL after stopTimeout, and waits.
func (p *process) stop() error {
	select {
	case err := <-p.done:
		p.done <- err
		return nil // already gone
	default:
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("signal %s: %w", p.name, err)
	}
	select {
	case <-p.done:
		return nil
	case <-time.After(stopTimeout):
		_ = p.cmd.Process.Kill()
		<-p.done
		return fmt.Errorf("%s ignored SIGTERM for %s and was killed", p.name, stopTimeout)
	}
}

// postgresCredential is the postgres OS user when we are root (PgBouncer
// refuses to run as root), else nil.
func postgresCredential() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("running as root needs the postgres OS user for pgbouncer: %w", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

// freePort returns a 127.0.0.1 TCP port that was free a moment ago.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}
