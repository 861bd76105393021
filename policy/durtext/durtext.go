package durtext

import (
	"strconv"
	"time"
)

const day = 24 * time.Hour

// Format is d as a person writes it: its whole days (a day is 24h), hours
// and minutes, each only when not zero, then what is left under a minute
// as Go says it ("30d", "1d12h", "2h30m", "1m30s", "1.5s", "1m500ms");
// "0s" for none, and a negative duration led by "-". The text parses back
// to d with internal/duration's Parse (and, without days, with
// time.ParseDuration).
func Format(d time.Duration) string {
	if d == 0 {
		return "0s"
	}
	sign := ""
	// Computed on the magnitude as unsigned, so that the most negative
	// duration, whose opposite overflows, is said too.
	u := uint64(d)
	if d < 0 {
		sign, u = "-", -u
	}
	s := sign
	for _, unit := range []struct {
		size   uint64
		suffix string
	}{{uint64(day), "d"}, {uint64(time.Hour), "h"}, {uint64(time.Minute), "m"}} {
		if n := u / unit.size; n > 0 {
			s += strconv.FormatUint(n, 10) + unit.suffix
		}
		u %= unit.size
	}
	if u > 0 {
		// Under a minute: Go's own words (30s, 1.5s, 250ms, 2µs).
		s += time.Duration(u).String()
	}
	return s
}
