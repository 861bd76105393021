package cmd

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
)

// durationValue is every duration flag's value: a Go duration (90s, 1h30m)
// that may begin with weeks and days (1w, 2d, 1d12h), since a hold or a
// wake is planned in days. A day is 24h, whatever a time zone's clocks do.
// It refuses a negative duration and one that overflows.
type durationValue time.Duration

// durationVar defines a duration flag, as pflag's DurationVar does.
func durationVar(fs *pflag.FlagSet, p *time.Duration, name string, value time.Duration, usage string) {
	*p = value
	fs.Var((*durationValue)(p), name, usage)
}

// leadingDays matches the weeks and days a duration starts with, and the
// rest, a Go duration.
var leadingDays = regexp.MustCompile(`^(?:(\d+)w)?(?:(\d+)d)?(.*)$`)

const day = 24 * time.Hour

func (d *durationValue) Set(s string) error {
	v, err := parseDuration(s)
	if err != nil {
		return err
	}
	*d = durationValue(v)
	return nil
}

func parseDuration(s string) (time.Duration, error) {
	if strings.HasPrefix(s, "-") {
		return 0, errNegative
	}
	m := leadingDays.FindStringSubmatch(s)
	var total time.Duration
	for i, unit := range []time.Duration{7 * day, day} {
		if m[i+1] == "" {
			continue
		}
		n, err := strconv.ParseInt(m[i+1], 10, 64)
		if err != nil || n > math.MaxInt64/int64(unit) || total > math.MaxInt64-time.Duration(n)*unit {
			return 0, errTooLong
		}
		total += time.Duration(n) * unit
	}
	if m[3] == "" && s != "" {
		return total, nil
	}
	rest, err := time.ParseDuration(m[3])
	switch {
	case err != nil && goDuration.MatchString(m[3]):
		return 0, errTooLong // well formed: too long for a time.Duration
	case err != nil:
		return 0, errors.New("want a duration such as 90s, 1h30m, 2d, 1w or 1d12h")
	case rest < 0:
		return 0, errNegative
	case total > math.MaxInt64-rest:
		return 0, errTooLong
	}
	return total + rest, nil
}

// goDuration matches what time.ParseDuration takes, short of its bounds.
var goDuration = regexp.MustCompile(`^[+-]?(?:(?:\d+\.?\d*|\.\d+)(?:ns|us|µs|μs|ms|s|m|h))+$`)

// The errors of a duration refused, which pflag prefixes with the value
// and the flag.
var (
	errNegative = errors.New("negative: want a duration of 0 or more")
	errTooLong  = errors.New("too long: a duration is at most about 292 years (106751d)")
)

func (d *durationValue) Type() string { return "duration" }

// String is the duration as Go prints it (10s, 1m0s), led by whole days
// (30d, 1d12h0m0s) so that a default of weeks reads as one, and 0 for none,
// which help then shows as no default. Each form parses back.
func (d *durationValue) String() string {
	v := time.Duration(*d)
	switch days := v / day; {
	case v == 0:
		return "0"
	case days == 0:
		return v.String()
	case v%day == 0:
		return fmt.Sprintf("%dd", days)
	default:
		return fmt.Sprintf("%dd%s", days, v%day)
	}
}
