package drill

import (
	"errors"
	"fmt"
	"regexp"
	"time"
)

// Config of one drill run. Zero fields take the defaults of seed 003's
// probe (six workers, 0.15 s between writes, 24 s).
type Config struct {
	// DSN is a libpq-style connection string or URL; it may list several
	// hosts. target_session_attrs=read-write is always applied.
	DSN      string
	Workers  int           // parallel workers (default 6)
	Duration time.Duration // how long workers write (default 24 s)
	Interval time.Duration // pause after an acknowledged write (default 150 ms)
	Backoff  Backoff       // pause after failures (default DefaultBackoff)
	// AttemptTimeout bounds one attempt: connect plus INSERT (default 3 s).
	AttemptTimeout time.Duration
	// ReconcileTimeout bounds the search for a primary afterwards and the
	// lookup (default 60 s): right after a failover it may take a while.
	ReconcileTimeout time.Duration
	// Table is the table to create, write and drop; it must not exist
	// (default doorman_drill_<random>).
	Table string
	// KeepTable leaves the table in place after the run.
	KeepTable bool
	// Rand returns uniform numbers in [0, 1) for the jitter (default
	// math/rand/v2); it must be safe for concurrent use.
	Rand func() float64
	// Validate is how a connection is judged read-write: ValidateLibpq
	// (default) as libpq 14+ does, from the in_hot_standby and
	// default_transaction_read_only the server reported at login, falling
	// back to SHOW transaction_read_only when it reported neither;
	// ValidateShow always asks SHOW transaction_read_only (pgx's way). A
	// pooler that reports stale role parameters fools only the first.
	Validate string
	// Mark, when set, is called with the time the run started, so that a
	// harness can relate its own actions to event offsets.
	Mark func(time.Time)
}

// The ways of checking target_session_attrs=read-write (Config.Validate).
const (
	ValidateLibpq = "libpq"
	ValidateShow  = "show"
)

var tableName = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}$`)

func (c Config) withDefaults() Config {
	if c.Workers == 0 {
		c.Workers = 6
	}
	if c.Duration == 0 {
		c.Duration = 24 * time.Second
	}
	if c.Interval == 0 {
		c.Interval = 150 * time.Millisecond
	}
	if c.Backoff == (Backoff{}) {
		c.Backoff = DefaultBackoff
	}
	if c.Validate == "" {
		c.Validate = ValidateLibpq
	}
	if c.AttemptTimeout == 0 {
		c.AttemptTimeout = 3 * time.Second
	}
	if c.ReconcileTimeout == 0 {
		c.ReconcileTimeout = time.Minute
	}
	return c
}

func (c Config) validate() error {
	var errs []error
	if c.DSN == "" {
		errs = append(errs, errors.New("dsn: required"))
	}
	if c.Workers < 1 || c.Workers > 1000 {
		errs = append(errs, fmt.Errorf("workers: %d is not in 1..1000", c.Workers))
	}
	if c.Duration < 0 || c.Interval < 0 || c.AttemptTimeout <= 0 || c.ReconcileTimeout <= 0 {
		errs = append(errs, errors.New("duration, interval, attempt timeout, reconcile timeout: must be positive"))
	}
	b := c.Backoff
	if b.Base <= 0 || b.Max < b.Base || b.JitterLow <= 0 || b.JitterHigh < b.JitterLow {
		errs = append(errs, fmt.Errorf("backoff: need 0 < base <= max and 0 < jitter low <= high, got %+v", b))
	}
	if c.Validate != ValidateLibpq && c.Validate != ValidateShow {
		errs = append(errs, fmt.Errorf("validate: %q is not %s or %s", c.Validate, ValidateLibpq, ValidateShow))
	}
	if c.Table != "" && !tableName.MatchString(c.Table) {
		errs = append(errs, fmt.Errorf("table: %q is not a lower-case identifier", c.Table))
	}
	return errors.Join(errs...)
}
