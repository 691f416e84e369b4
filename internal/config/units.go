package config

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// ByteSize is a size in bytes, written in the config as a bare integer
// (bytes) or a string with a binary unit: "1024B", "1K"/"1KB", "1M"/"1MB",
// "1G"/"1GB" (case-insensitive).
type ByteSize int64

// String renders s with the largest unit that divides it exactly.
func (s ByteSize) String() string {
	switch {
	case s != 0 && s%(1<<30) == 0:
		return strconv.FormatInt(int64(s>>30), 10) + "GB"
	case s != 0 && s%(1<<20) == 0:
		return strconv.FormatInt(int64(s>>20), 10) + "MB"
	case s != 0 && s%(1<<10) == 0:
		return strconv.FormatInt(int64(s>>10), 10) + "KB"
	}
	return strconv.FormatInt(int64(s), 10) + "B"
}

var errNegative = errors.New("must not be negative")

// ParseDuration parses a human duration: a bare integer is milliseconds;
// otherwise "100ms", "5s", "5m", "1h", "1d" or any time.ParseDuration form
// ("1h30m", "1.5s"). Negative values are rejected.
func ParseDuration(s string) (time.Duration, error) {
	t := strings.TrimSpace(s)
	if t == "" {
		return 0, errors.New("empty duration")
	}
	if isDigits(t) {
		ms, err := strconv.ParseInt(t, 10, 64)
		if err != nil || ms > math.MaxInt64/int64(time.Millisecond) {
			return 0, fmt.Errorf("duration %q out of range", s)
		}
		return time.Duration(ms) * time.Millisecond, nil
	}
	if days, ok := strings.CutSuffix(t, "d"); ok && isDigits(days) {
		n, err := strconv.ParseInt(days, 10, 64)
		if err != nil || n > math.MaxInt64/int64(24*time.Hour) {
			return 0, fmt.Errorf("duration %q out of range", s)
		}
		return time.Duration(n) * 24 * time.Hour, nil
	}
	d, err := time.ParseDuration(t)
	if err != nil {
		return 0, fmt.Errorf("invalid duration %q (want milliseconds or a number with ms, s, m, h or d)", s)
	}
	if d < 0 {
		return 0, errNegative
	}
	return d, nil
}

// ParseByteSize parses a byte size: a bare integer is bytes; a number
// followed by B, K, KB, M, MB, G or GB (any case, binary multiples).
func ParseByteSize(s string) (ByteSize, error) {
	t := strings.TrimSpace(s)
	i := 0
	for i < len(t) && t[i] >= '0' && t[i] <= '9' {
		i++
	}
	if i == 0 {
		return 0, fmt.Errorf("invalid byte size %q (want bytes or a number with B, K, KB, M, MB, G or GB)", s)
	}
	n, err := strconv.ParseInt(t[:i], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("byte size %q out of range", s)
	}
	var shift uint
	switch strings.ToUpper(strings.TrimSpace(t[i:])) {
	case "", "B":
	case "K", "KB":
		shift = 10
	case "M", "MB":
		shift = 20
	case "G", "GB":
		shift = 30
	default:
		return 0, fmt.Errorf("invalid byte size %q (want bytes or a number with B, K, KB, M, MB, G or GB)", s)
	}
	if n > math.MaxInt64>>shift {
		return 0, fmt.Errorf("byte size %q out of range", s)
	}
	return ByteSize(n << shift), nil
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
