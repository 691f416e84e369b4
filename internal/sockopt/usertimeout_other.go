//go:build !linux && !darwin

package sockopt

import (
	"errors"
	"time"
)

// UserTimeoutSupported: this OS has no option for it.
const UserTimeoutSupported = false

func setUserTimeout(int, time.Duration) error {
	return errors.ErrUnsupported
}
