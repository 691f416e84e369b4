package upgrade

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"time"

	"go.uber.org/zap"
)

// Listener kinds passed to the new process.
const (
	KindTCP     = "tcp"
	KindUnix    = "unix"
	KindMetrics = "metrics"
	kindMigrate = "migrate"
	kindReady   = "ready"
)

// InheritFlag is the flag that names an inherited descriptor: kind=fd.
const InheritFlag = "inherit-fd"

// DefaultReadyTimeout is how long Spawn waits for the new process.
const DefaultReadyTimeout = 10 * time.Second

// ErrConfigInvalid is wrapped by Spawn's error when the new process
// refused the configuration (pg_doorman -t failed).
var ErrConfigInvalid = errors.New("configuration check failed")

// Listener is a listening socket handed to the new process.
type Listener struct {
	Kind string // KindTCP, KindUnix or KindMetrics
	L    interface{ File() (*os.File, error) }
}

// SpawnOptions describe the new process.
type SpawnOptions struct {
	Binary     string   // the executable, normally os.Executable()
	ConfigPath string   // checked with -t first
	Args       []string // the new process's arguments, without the inherit flags
	Listeners  []Listener
	// Migrate opens the migration channel (foreground); false for daemon
	// mode, where clients are drained instead.
	Migrate      bool
	ReadyTimeout time.Duration
	// Log gets the steps' lines the seed lists for monitoring an upgrade
	// (validation, the start with the TCP listener's descriptor); nil: none.
	Log *zap.Logger
}

// Child is a started and ready new process.
type Child struct {
	PID     int
	Channel *Channel // nil without Migrate
}

// Validate runs binary -t config and returns its output in the error when
// it fails.
func Validate(ctx context.Context, binary, config string) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, binary, "-t", config).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%w: %s -t %s: %v: %s", ErrConfigInvalid, binary, config, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// Spawn validates the config, starts the new process with the listeners
// and waits until it signals readiness. On any failure the new process
// is killed and the old one goes on as before.
func Spawn(ctx context.Context, o SpawnOptions) (*Child, error) {
	log := o.Log
	if log == nil {
		log = zap.NewNop()
	}
	log.Info(fmt.Sprintf("Validating configuration with: %s -t %s", o.Binary, o.ConfigPath))
	if err := Validate(ctx, o.Binary, o.ConfigPath); err != nil {
		return nil, err
	}
	log.Info("Configuration validation successful")
	var files []*os.File
	defer func() {
		for _, f := range files {
			_ = f.Close()
		}
	}()
	args := append([]string(nil), o.Args...)
	tcpFD := -1
	add := func(kind string, f *os.File) {
		if kind == KindTCP && tcpFD < 0 {
			tcpFD = 3 + len(files)
		}
		args = append(args, fmt.Sprintf("--%s=%s=%d", InheritFlag, kind, 3+len(files)))
		files = append(files, f)
	}
	for _, l := range o.Listeners {
		f, err := l.L.File()
		if err != nil {
			return nil, fmt.Errorf("listener %s: %w", l.Kind, err)
		}
		add(l.Kind, f)
	}
	var ours *os.File
	if o.Migrate {
		a, b, err := socketpair()
		if err != nil {
			return nil, err
		}
		ours = a
		add(kindMigrate, b)
	}
	readyR, readyW, err := os.Pipe()
	if err != nil {
		if ours != nil {
			_ = ours.Close()
		}
		return nil, fmt.Errorf("readiness pipe: %w", err)
	}
	defer readyR.Close()
	add(kindReady, readyW)

	log.Info(fmt.Sprintf("Starting new process with inherited listener fd=%d", tcpFD))
	cmd := exec.Command(o.Binary, args...)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	cmd.ExtraFiles = files
	if err := cmd.Start(); err != nil {
		if ours != nil {
			_ = ours.Close()
		}
		return nil, fmt.Errorf("start %s: %w", o.Binary, err)
	}
	for _, f := range files {
		_ = f.Close() // the child has them now
	}
	files = nil
	timeout := o.ReadyTimeout
	if timeout <= 0 {
		timeout = DefaultReadyTimeout
	}
	if err := waitReady(ctx, readyR, timeout); err != nil {
		_ = cmd.Process.Kill()
		_, _ = cmd.Process.Wait()
		if ours != nil {
			_ = ours.Close()
		}
		return nil, fmt.Errorf("new process %d: %w", cmd.Process.Pid, err)
	}
	child := &Child{PID: cmd.Process.Pid}
	// Reap it if it exits while we live; it outlives us normally.
	go func() { _ = cmd.Wait() }()
	if ours != nil {
		ch, err := newChannel(ours)
		if err != nil {
			return nil, err
		}
		child.Channel = ch
	}
	return child, nil
}

// waitReady waits for one byte on r, or EOF (the child exited), or the
// timeout.
func waitReady(ctx context.Context, r *os.File, timeout time.Duration) error {
	_ = r.SetReadDeadline(time.Now().Add(timeout))
	done := make(chan error, 1)
	go func() {
		var b [1]byte
		_, err := r.Read(b[:])
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) {
				return fmt.Errorf("not ready within %s", timeout)
			}
			return fmt.Errorf("exited before it was ready: %w", err)
		}
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Inherited is what a new process got from the old one.
type Inherited struct {
	Listeners map[string]net.Listener
	Channel   *Channel // nil in daemon mode
	ready     *os.File
}

// FromFlags turns --inherit-fd kind=N values into listeners, the channel
// and the readiness pipe. No values: nil, nil (a normal start).
func FromFlags(specs []string) (*Inherited, error) {
	if len(specs) == 0 {
		return nil, nil
	}
	in := &Inherited{Listeners: map[string]net.Listener{}}
	for _, spec := range specs {
		kind, num, ok := strings.Cut(spec, "=")
		var fd int
		if _, err := fmt.Sscan(num, &fd); !ok || err != nil || fd < 3 {
			return nil, fmt.Errorf("--%s %q: want kind=fd", InheritFlag, spec)
		}
		switch kind {
		case KindTCP, KindUnix, KindMetrics, kindMigrate, kindReady:
		default:
			return nil, fmt.Errorf("--%s %q: unknown kind", InheritFlag, spec)
		}
		f := os.NewFile(uintptr(fd), kind)
		switch kind {
		case KindTCP, KindUnix, KindMetrics:
			l, err := net.FileListener(f)
			_ = f.Close()
			if err != nil {
				return nil, fmt.Errorf("inherited %s listener fd %d: %w", kind, fd, err)
			}
			if ul, ok := l.(*net.UnixListener); ok {
				ul.SetUnlinkOnClose(false) // the socket file outlives any one process
			}
			in.Listeners[kind] = l
		case kindMigrate:
			ch, err := newChannel(f)
			if err != nil {
				return nil, err
			}
			in.Channel = ch
		case kindReady:
			in.ready = f
		}
	}
	if in.ready == nil {
		return nil, fmt.Errorf("--%s: no ready pipe", InheritFlag)
	}
	return in, nil
}

// Ready tells the old process that this one accepts connections.
func (in *Inherited) Ready() error {
	if in == nil || in.ready == nil {
		return nil
	}
	_, err := in.ready.Write([]byte{1})
	_ = in.ready.Close()
	in.ready = nil
	if err != nil {
		return fmt.Errorf("signal readiness: %w", err)
	}
	return nil
}
