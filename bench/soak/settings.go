package soak

import (
	"errors"
	"fmt"
	"strconv"
	"time"
)

// Settings are the knobs of one soak run.
type Settings struct {
	Duration  time.Duration // SOAK_DURATION: load time, Go duration syntax
	Clients   int           // SOAK_CLIENTS: concurrent client connections
	PoolSize  int           // SOAK_POOL_SIZE: pg_doorman pool_size
	Interval  time.Duration // SOAK_INTERVAL: time between samples
	Warmup    time.Duration // SOAK_WARMUP: samples before this are not judged; 0: derived
	Scale     int           // SOAK_SCALE: pgbench -i -s
	Tolerance float64       // SOAK_RSS_TOLERANCE: allowed (max-min)/min of RSS after warm-up
	Slack     int64         // SOAK_RSS_SLACK (MiB): max-min of RSS after warm-up that passes whatever the fraction
	Out       string        // SOAK_OUT: Markdown fragment file; "": print only
	NoKills   bool          // SOAK_KILLS=0: no kill kinds, to tell their effects apart

	DoormanBin string // path of the pg_doorman binary
	RepoDir    string // for the git commit in the report
}

// DefaultSettings are the 30 minutes of 400 clients on a pool of 40.
func DefaultSettings() Settings {
	return Settings{
		Duration: 30 * time.Minute, Clients: 400, PoolSize: 40, Interval: time.Minute,
		Scale: 10, Tolerance: 0.05, Slack: 4 << 20, DoormanBin: "bin/pg_doorman", RepoDir: ".",
	}
}

// ApplyEnv overrides s with the SOAK_* variables that getenv returns
// non-empty and validates the result; every bad variable is reported.
func (s Settings) ApplyEnv(getenv func(string) string) (Settings, error) {
	var errs []error
	positive := func(key string, dst *int) {
		if v := getenv(key); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 {
				errs = append(errs, fmt.Errorf("%s=%q: want a positive integer", key, v))
				return
			}
			*dst = n
		}
	}
	duration := func(key string, dst *time.Duration) {
		if v := getenv(key); v != "" {
			d, err := time.ParseDuration(v)
			if err != nil || d <= 0 {
				errs = append(errs, fmt.Errorf("%s=%q: want a positive duration such as 30m", key, v))
				return
			}
			*dst = d
		}
	}
	duration("SOAK_DURATION", &s.Duration)
	duration("SOAK_INTERVAL", &s.Interval)
	duration("SOAK_WARMUP", &s.Warmup)
	positive("SOAK_CLIENTS", &s.Clients)
	positive("SOAK_POOL_SIZE", &s.PoolSize)
	positive("SOAK_SCALE", &s.Scale)
	if v := getenv("SOAK_RSS_TOLERANCE"); v != "" {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f <= 0 || f >= 1 {
			errs = append(errs, fmt.Errorf("SOAK_RSS_TOLERANCE=%q: want a fraction such as 0.05", v))
		} else {
			s.Tolerance = f
		}
	}
	if v := getenv("SOAK_RSS_SLACK"); v != "" {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f < 0 || f > 1024 {
			errs = append(errs, fmt.Errorf("SOAK_RSS_SLACK=%q: want MiB such as 4 (0 to 1024)", v))
		} else {
			s.Slack = int64(f * (1 << 20))
		}
	}
	switch v := getenv("SOAK_KILLS"); v {
	case "", "1":
	case "0":
		s.NoKills = true
	default:
		errs = append(errs, fmt.Errorf("SOAK_KILLS=%q: want 0 or 1", v))
	}
	if v := getenv("SOAK_OUT"); v != "" {
		s.Out = v
	}
	if s.Interval > s.Duration {
		errs = append(errs, fmt.Errorf("SOAK_INTERVAL %s is longer than SOAK_DURATION %s", s.Interval, s.Duration))
	}
	if s.Warmup >= s.Duration {
		errs = append(errs, fmt.Errorf("SOAK_WARMUP %s leaves nothing of SOAK_DURATION %s to judge", s.Warmup, s.Duration))
	}
	return s, errors.Join(errs...)
}

// WarmupTime is the warm-up: SOAK_WARMUP when set, else 5 minutes or a
// third of the run, whichever is shorter, rounded down to whole intervals
// (at least one interval), so a 30-minute run judges minutes 5 to 30 and a
// 3-minute run judges minutes 1 to 3.
func (s Settings) WarmupTime() time.Duration {
	if s.Warmup > 0 {
		return s.Warmup
	}
	w := min(5*time.Minute, s.Duration/3)
	w = w / s.Interval * s.Interval
	return max(w, s.Interval)
}
