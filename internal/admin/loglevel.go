package admin

import (
	"fmt"

	"go.uber.org/zap"

	"github.com/doorman-go/doorman/internal/logging"
)

// parseLevel reads a SET log_level value with the same rules as
// general.log_level (logging.ParseLevel); "default" is the level the
// console started with. A bad value is logged at WARN and returned: the
// caller keeps the current level.
func (c *Console) parseLevel(value string) (logging.Level, error) {
	l, err := logging.ParseLevel(value, c.initialLevel)
	if err != nil {
		err = fmt.Errorf("invalid log_level %q: %w", value, err)
		c.log.Warn("SET log_level refused, keeping the current level",
			zap.String("log_level", logging.LevelName(c.d.Level.Level())), zap.Error(err))
	}
	return l, err
}

// levelName is SHOW LOG_LEVEL's rendering of a zap level.
var levelName = logging.LevelName
