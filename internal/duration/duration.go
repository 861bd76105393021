package duration

import (
	"errors"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/nsman/nsman/policy/durtext"
)

// Value is a time.Duration as a pflag.Value: set from a duration with
// days (Parse), printed as one (String).
type Value time.Duration

// leadingDays matches the weeks and days a duration starts with, and the
// rest, a Go duration.
var leadingDays = regexp.MustCompile(`^(?:(\d+)w)?(?:(\d+)d)?(.*)$`)

const day = 24 * time.Hour

// Set is pflag.Value's: d becomes the duration s says (Parse).
func (d *Value) Set(s string) error {
	v, err := Parse(s)
	if err != nil {
		return err
	}
	*d = Value(v)
	return nil
}

// Parse is the duration s says: a Go duration that may begin with weeks
// and days. It refuses a negative duration and one that overflows.
func Parse(s string) (time.Duration, error) {
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

// Type is pflag.Value's: the name help shows for the value.
func (d *Value) Type() string { return "duration" }

// String is the duration as users write it: its whole days, hours and
// minutes, each only when not zero, then what is left under a minute as Go
// says it (10s, 1m, 30d, 1d12h1m30s, 1m500ms), and 0 for none, which help
// then shows as no default. Each form parses back. It is policy/durtext's
// Format, which messages use.
func (d *Value) String() string {
	v := time.Duration(*d)
	if v <= 0 {
		return "0"
	}
	return durtext.Format(v)
}
