package proxy

import (
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/doorman-go/doorman/internal/patroni"
	"github.com/doorman-go/doorman/internal/relay"
)

// env is what every port and cluster shares: logger, metrics, clock and the
// settings that reload may change.
type env struct {
	log      *zap.Logger
	metrics  *Metrics
	clock    patroni.Clock
	settings atomic.Pointer[settings]
	// suspect passes a trigger to the named cluster; set once by New.
	suspect func(cluster string, t Trigger)
	// relay runs the forwarded connections' event loops; set by Start
	// before any port exists, closed by Shutdown after the last connection.
	// nil where the system has no epoll: forward then uses pumps.
	relay *relay.Relay
}

type settings struct {
	maxAge         time.Duration
	connectTimeout time.Duration
}

func (e *env) maxAge() time.Duration         { return e.settings.Load().maxAge }
func (e *env) connectTimeout() time.Duration { return e.settings.Load().connectTimeout }

// realClock is the system clock as a patroni.Clock.
type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

func (realClock) NewTicker(d time.Duration) patroni.Ticker { return realTicker{time.NewTicker(d)} }

type realTicker struct{ t *time.Ticker }

func (r realTicker) C() <-chan time.Time { return r.t.C }
func (r realTicker) Stop()               { r.t.Stop() }
