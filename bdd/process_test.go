package bdd

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

// startTimeout bounds how long pg_doorman may take to open its port.
const startTimeout = 10 * time.Second

// doorman is one pg_doorman process started by a scenario.
type doorman struct {
	cmd     *exec.Cmd
	port    int
	cfgPath string
	logPath string

	done     chan struct{} // closed when the process has exited
	exitCode int           // valid once done is closed
	exitedAt time.Time     // valid once done is closed

	signaledAt time.Time // when the last signal was sent
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

// startDoorman writes cfg to dir/pg_doorman.yaml, starts the binary on it
// and waits until it accepts TCP connections. t's cleanup kills it.
func startDoorman(t *scenarioT, dir string, cfg doormanConfig) (*doorman, error) {
	d := &doorman{
		port:    cfg.Port,
		cfgPath: filepath.Join(dir, "pg_doorman.yaml"),
		logPath: filepath.Join(dir, "pg_doorman.log"),
		done:    make(chan struct{}),
	}
	if err := d.writeConfig(cfg); err != nil {
		return nil, err
	}
	logFile, err := os.Create(d.logPath)
	if err != nil {
		return nil, fmt.Errorf("create pg_doorman log: %w", err)
	}
	d.cmd = exec.Command(doormanBin, d.cfgPath)
	d.cmd.Dir = dir
	d.cmd.Stdout, d.cmd.Stderr = logFile, logFile
	// The process dies with the test binary even if no cleanup runs.
	d.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := d.cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("start %s: %w", doormanBin, err)
	}
	go d.wait(logFile)
	t.Cleanup(d.kill)
	if err := d.waitListening(); err != nil {
		return nil, fmt.Errorf("%w; pg_doorman log:\n%s", err, d.logTail(40))
	}
	return d, nil
}

// wait reaps the process and records how it ended.
func (d *doorman) wait(logFile *os.File) {
	err := d.cmd.Wait()
	d.exitedAt = time.Now()
	d.exitCode = d.cmd.ProcessState.ExitCode()
	var exitErr *exec.ExitError
	if err != nil && !errors.As(err, &exitErr) {
		d.exitCode = -1
	}
	logFile.Close()
	close(d.done)
}

func (d *doorman) waitListening() error {
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(d.port))
	return poll(startTimeout, "pg_doorman listening on "+addr, func() (bool, error) {
		select {
		case <-d.done:
			return false, fmt.Errorf("pg_doorman exited with code %d before listening", d.exitCode)
		default:
		}
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			return false, nil
		}
		c.Close()
		return true, nil
	})
}

// writeConfig replaces the config file. A file is renamed into place so
// that a reload never reads half of it.
func (d *doorman) writeConfig(cfg doormanConfig) error {
	tmp := d.cfgPath + ".new"
	if err := os.WriteFile(tmp, []byte(cfg.YAML()), 0o600); err != nil {
		return fmt.Errorf("write config: %w", err)
	}
	if err := os.Rename(tmp, d.cfgPath); err != nil {
		return fmt.Errorf("write config: %w", err)
	}
	return nil
}

// signal sends sig to the process and records when.
func (d *doorman) signal(sig syscall.Signal) error {
	d.signaledAt = time.Now()
	if err := d.cmd.Process.Signal(sig); err != nil {
		return fmt.Errorf("send %s to pg_doorman: %w", sig, err)
	}
	return nil
}

// running reports whether the process has not exited.
func (d *doorman) running() bool {
	select {
	case <-d.done:
		return false
	default:
		return true
	}
}

// kill is the cleanup: SIGKILL unless the process already exited.
func (d *doorman) kill() {
	if d.running() {
		_ = d.cmd.Process.Kill()
	}
	select {
	case <-d.done:
	case <-time.After(5 * time.Second):
		panic(fmt.Sprintf("pg_doorman pid %d did not die after SIGKILL", d.cmd.Process.Pid))
	}
}

// dsn is a pgx DSN to pg_doorman over TCP. Statements are unnamed
// (exec mode) so that transaction pooling needs no prepared statement
// cache.
func (d *doorman) dsn(user, password, db string) string {
	return fmt.Sprintf("host=127.0.0.1 port=%d user=%s password=%s dbname=%s sslmode=disable connect_timeout=5 default_query_exec_mode=exec",
		d.port, user, password, db)
}

// log returns the whole pg_doorman log.
func (d *doorman) log() string {
	b, err := os.ReadFile(d.logPath)
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	return string(b)
}

// logTail returns the last n lines of the log.
func (d *doorman) logTail(n int) string {
	return tail(d.log(), n)
}
