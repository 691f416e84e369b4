package admin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/doorman-go/doorman/internal/config"
	"github.com/doorman-go/doorman/internal/daemon"
	"github.com/doorman-go/doorman/internal/procnet"
	"github.com/doorman-go/doorman/internal/protocol"
	"github.com/doorman-go/doorman/internal/session"
)

// defaultPauseTimeout bounds how long PAUSE waits for server connections in
// use to come back. PgBouncer waits forever; in session mode that can be
// until the clients disconnect, so the console answers after this long with
// a NOTICE (the pools stay paused either way).
const defaultPauseTimeout = 30 * time.Second

// Console serves the admin databases of one daemon.
type Console struct {
	d            *daemon.Daemon
	log          *zap.Logger
	initialLevel zapcore.Level // SET log_level = 'default' restores it
	created      time.Time
	now          func() time.Time
	pauseTimeout time.Duration
	readSockets  func() (procnet.Counts, error) // SHOW SOCKETS; tests replace it
	stats        statsSampler
	metrics      Metrics // nil: failures are not counted
}

// New returns a console for d that counts its failures in m (nil: not
// counted). d.Level must be a working zap.AtomicLevel; its level at this
// moment is what SET log_level = 'default' restores.
func New(d *daemon.Daemon, m Metrics) *Console {
	log := d.Log
	if log == nil {
		log = zap.NewNop()
	}
	return &Console{
		d: d, log: log, initialLevel: d.Level.Level(), metrics: m,
		created: time.Now(), now: time.Now, pauseTimeout: defaultPauseTimeout,
		readSockets: func() (procnet.Counts, error) { return procnet.Read("/proc") },
	}
}

// frameReader is the part of *protocol.Reader Serve needs.
type frameReader interface {
	Next() (protocol.Frame, error)
}

// Serve runs one authenticated admin session until the client sends
// Terminate or goes away (both return nil) or the protocol breaks. The
// welcome has already been sent. When ctx ends, the pending read is
// interrupted and Serve returns nil.
func (c *Console) Serve(ctx context.Context, s *session.Session) error {
	rd := s.Reader()
	if rd == nil {
		return errors.New("admin session has no reader")
	}
	if nc := s.Conn(); nc != nil {
		stop := context.AfterFunc(ctx, func() { _ = nc.SetReadDeadline(time.Now()) })
		defer stop()
	}
	return c.serve(ctx, rd, s.Write)
}

// serve is the message loop, apart from the session for tests.
func (c *Console) serve(ctx context.Context, rd frameReader, write func([]byte) error) error {
	var out []byte
	skipping := false // after an extended-protocol message, until Sync
	for {
		f, err := rd.Next()
		if err != nil {
			if errors.Is(err, io.EOF) || ctx.Err() != nil {
				return nil
			}
			if msg := readErrorResponse(err); msg != nil {
				c.failed(FailProtocol)
				_ = write(msg)
			}
			return fmt.Errorf("read admin message: %w", err)
		}
		out = out[:0]
		var after func() // runs once the reply is written
		switch typ := f.Type(); {
		case typ == protocol.MsgTerminate:
			return nil
		case typ == protocol.MsgSync:
			skipping = false
			out = protocol.ReadyForQuery{TxStatus: protocol.TxIdle}.Encode(out)
		case skipping || typ == protocol.MsgFlush:
			continue
		case typ == protocol.MsgQuery:
			var q protocol.Query
			if err := q.Decode(f.Body()); err != nil {
				c.failed(FailProtocol)
				_ = write(protocol.AppendError(nil, "FATAL", "08P01", "invalid Query message"))
				return fmt.Errorf("decode admin query: %w", err)
			}
			out, after = c.execQuery(ctx, out, q.String)
			out = protocol.ReadyForQuery{TxStatus: protocol.TxIdle}.Encode(out)
		case isExtended(typ):
			skipping = true
			c.failed(FailExtendedProtocol)
			out = appendError(out, "0A000", "extended query protocol not supported by the admin console")
		default:
			c.failed(FailProtocol)
			_ = write(protocol.AppendError(nil, "FATAL", "08P01", fmt.Sprintf("unsupported message type %q for the admin console", typ)))
			return fmt.Errorf("unsupported admin message type %q", typ)
		}
		err = write(out)
		if after != nil {
			after()
		}
		if err != nil {
			return fmt.Errorf("write admin reply: %w", err)
		}
	}
}

// readErrorResponse is the FATAL answer to a broken or oversized admin
// message (the reader's limit is session.MaxAdminMessage), nil for a read
// error the client cannot be told about.
func readErrorResponse(err error) []byte {
	var tooLarge *protocol.MessageTooLargeError
	switch {
	case errors.As(err, &tooLarge):
		return protocol.AppendError(nil, "FATAL", "54000",
			fmt.Sprintf("admin command too long: %d bytes, limit %d", tooLarge.Length, tooLarge.Max))
	case errors.Is(err, protocol.ErrInvalidLength):
		return protocol.AppendError(nil, "FATAL", "08P01", "invalid message length")
	}
	return nil
}

func isExtended(typ byte) bool {
	switch typ {
	case protocol.MsgParse, protocol.MsgBind, protocol.MsgDescribe, protocol.MsgExecute, protocol.MsgClose:
		return true
	}
	return false
}

// errorf is a failed command counted by reason (one of FailureReasons),
// answered with code.
func errorf(reason, code, format string, args ...any) error {
	return &consoleError{reason: reason, code: code, msg: fmt.Sprintf(format, args...)}
}

// execQuery runs a whole Query and appends the replies (without
// ReadyForQuery). Parsing is all or nothing; execution stops at the first
// failed command, whose ErrorResponse ends the reply. after, if not nil,
// must run once the reply is written: SHUTDOWN closes idle sessions, this
// one included, and the client should see its answer first.
func (c *Console) execQuery(ctx context.Context, dst []byte, q string) (out []byte, after func()) {
	cmds, err := parseQuery(q)
	if err != nil {
		c.failed(FailSyntax)
		return appendError(dst, "42601", err.Error()), nil
	}
	if len(cmds) == 0 {
		return protocol.EmptyQueryResponse{}.Encode(dst), nil
	}
	for _, cmd := range cmds {
		dst, err = c.exec(ctx, dst, cmd, &after)
		if err != nil {
			code := "XX000"
			var ce *consoleError
			if errors.As(err, &ce) {
				code = ce.code
			}
			c.failed(failureReason(err))
			return appendError(dst, code, err.Error()), after
		}
	}
	return dst, after
}

func (c *Console) exec(ctx context.Context, dst []byte, cmd command, after *func()) ([]byte, error) {
	switch cmd.Verb {
	case verbShow:
		return c.show(dst, cmd.Arg)
	case verbSet:
		return c.set(dst, cmd.Arg, cmd.Value)
	case verbPause:
		return c.pause(ctx, dst, cmd.Arg)
	case verbResume:
		return c.resume(dst, cmd.Arg)
	case verbReconnect:
		return c.reconnect(dst, cmd.Arg)
	case verbReload:
		return c.reload(dst)
	case verbShutdown:
		c.log.Info("SHUTDOWN command issued")
		*after = c.d.Shutdown
		return appendTag(dst, "SHUTDOWN"), nil
	case verbUpgrade:
		// Run by whoever serves Upgrades (cmd/pg_doorman's signal loop,
		// as for SIGUSR2): the new process needs the command line.
		if err := c.d.RequestUpgrade(); err != nil {
			return nil, errorf(FailUpgrade, "55000", "%s", err.Error())
		}
		c.log.Info("UPGRADE command issued")
		return appendTag(dst, "UPGRADE"), nil
	}
	panic("BUG: admin: parser produced unknown verb " + cmd.Verb)
}

func (c *Console) show(dst []byte, subject string) ([]byte, error) {
	var rs resultSet
	switch subject {
	case "HELP":
		dst = appendNotice(dst, "Console usage", helpDetail)
		return appendTag(dst, "SHOW"), nil
	case "VERSION":
		rs = showVersion(daemon.Version)
	case "LOG_LEVEL":
		rs = showLogLevel(levelName(c.d.Level.Level()))
	case "CONFIG":
		rs = showConfig(c.d.Config().Settings(), config.Default().Settings())
	case "POOLS":
		rs = showPools(c.gatherPools(viewSessions(c.d.Clients)))
	case "POOLS_EXTENDED":
		rs = showPoolsExtended(gatherExtended(c.gatherPools(viewSessions(c.d.Clients)), c.d.Pools.Pools()))
	case "POOLS_MEMORY":
		rs = showPoolsMemory(gatherMemory(c.d.Pools.Pools()))
	case "CONNECTIONS":
		rs = showConnections(c.gatherConnections())
	case "SOCKETS":
		counts, err := c.readSockets()
		switch {
		case errors.Is(err, procnet.ErrUnsupported):
			return dst, errorf(FailUnsupported, "0A000", "SHOW SOCKETS is only available on Linux")
		case err != nil:
			return dst, errorf(FailOther, "58030", "SHOW SOCKETS: %v", err)
		}
		rs = showSocketStates(counts)
	case "DATABASES":
		rs = showDatabases(c.gatherPools(sessionView{}))
	case "USERS":
		rs = showUsers(c.gatherPools(sessionView{}))
	case "STATS":
		rs = showStats(c.stats.compute(c.gatherPools(sessionView{}), c.now(), c.startedAt()))
	case "CLIENTS":
		rs = showSockets(c.gatherClients(viewSessions(c.d.Clients)))
	case "SERVERS":
		rs = showSockets(c.gatherServers(viewSessions(c.d.Clients)))
	case "POOL_COORDINATOR":
		rs = showPoolCoordinator(c.d.Pools.Coordinators())
	case "AUTH_QUERY":
		rs = showAuthQuery(c.d.Pools.Resolvers())
	case "POOL_SCALING":
		rs = showPoolScaling(c.d.Pools.Pools())
	case "PREPARED_STATEMENTS":
		rs = showPrepared(c.d.Pools.Pools())
	case "LISTS":
		v := viewSessions(c.d.Clients)
		rs = showLists(countLists(c.d.Config(), c.gatherPools(v), c.gatherClients(v)))
	default:
		panic("BUG: admin: parser accepted SHOW " + subject)
	}
	return rs.encode(dst), nil
}

// startedAt is when the daemon began serving (before Serve: when the
// console was made).
func (c *Console) startedAt() time.Time {
	if t := c.d.StartedAt; !t.IsZero() {
		return t
	}
	return c.created
}
