package coordinator

import (
	"errors"
	"fmt"
)

// ErrExhausted matches every *ExhaustedError through errors.Is.
var ErrExhausted = errors.New("database connection limit exhausted")

// ExhaustedError is phase E: no main permit, nothing to evict, the wait
// expired and the reserve is full or not configured. Its message is the one
// clients see (SQLSTATE 53300 is the natural code for it).
type ExhaustedError struct {
	Database    string
	User        string
	Max         int // max_db_connections
	ReserveSize int // reserve_pool_size
	ReserveUsed int // reserve permits in use when the request gave up
}

func (e *ExhaustedError) Error() string {
	if e.ReserveSize == 0 {
		return fmt.Sprintf("all server connections to database '%s' are in use (max=%d, user='%s')",
			e.Database, e.Max, e.User)
	}
	return fmt.Sprintf("all server connections to database '%s' are in use (max=%d, reserve=%d/%d, user='%s')",
		e.Database, e.Max, e.ReserveUsed, e.ReserveSize, e.User)
}

// Is makes errors.Is(err, ErrExhausted) true.
func (e *ExhaustedError) Is(target error) bool { return target == ErrExhausted }
