package admin

import "errors"

// Metrics counts the commands the console refuses or that fail (package
// metrics, pg_doorman_admin_command_failures_total).
type Metrics interface {
	// AdminCommandFailed counts one failure by one of FailureReasons.
	AdminCommandFailed(reason string)
}

// Reasons a command failed, the reason label of
// pg_doorman_admin_command_failures_total: a fixed set, never text the
// client sent.
const (
	FailSyntax           = "syntax"              // not a command, or bad arguments (42601)
	FailExtendedProtocol = "extended_protocol"   // Parse, Bind, ... refused (0A000), once until Sync
	FailProtocol         = "protocol"            // a message that ends the session: too long, malformed, of a type the console does not take
	FailNoDatabase       = "no_database"         // PAUSE/RESUME/RECONNECT of a database not configured (3D000)
	FailNotAllowed       = "not_allowed"         // PAUSE/RESUME/RECONNECT of an admin database (55000), SET of a setting only the config file changes (55P02)
	FailUnknownParameter = "unknown_parameter"   // SET of a parameter that does not exist (42704)
	FailInvalidValue     = "invalid_value"       // SET log_level to a value that does not parse (22023)
	FailUnsupported      = "unsupported"         // SHOW SOCKETS off Linux (0A000)
	FailReload           = "reload_failed"       // RELOAD that kept the running configuration (F0000)
	FailUpgrade          = "upgrade_in_progress" // UPGRADE while one runs (55000)
	FailOther            = "other"               // anything else, e.g. SHOW SOCKETS could not read /proc (58030)
)

// FailureReasons are all the reasons, in the order of the constants.
var FailureReasons = []string{
	FailSyntax, FailExtendedProtocol, FailProtocol, FailNoDatabase, FailNotAllowed, FailUnknownParameter,
	FailInvalidValue, FailUnsupported, FailReload, FailUpgrade, FailOther,
}

// consoleError is a failed command: an ERROR with a SQLSTATE, and the
// reason it is counted by.
type consoleError struct {
	reason, code, msg string
}

func (e *consoleError) Error() string { return e.msg }

// failureReason is err's counted reason: FailOther unless it is a
// consoleError.
func failureReason(err error) string {
	var ce *consoleError
	if errors.As(err, &ce) {
		return ce.reason
	}
	return FailOther
}

// failed counts a failure; without Metrics it is not counted.
func (c *Console) failed(reason string) {
	if c.metrics != nil {
		c.metrics.AdminCommandFailed(reason)
	}
}
