package warn

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/nsman/nsman/policy/durtext"
)

// Bounds of warnBefore, as nsman's CRD sets them: a few reminders, none so
// short that a sweep every few minutes would miss it.
const (
	MaxThresholds = 4
	MinThreshold  = time.Minute
	// maxDays keeps a threshold a valid time.Duration with room to spare.
	maxDays = 3650
)

// leadingDays matches the days a threshold may begin with, and the rest, a
// Go duration, as the duration flags read them (2d, 1d12h, 90m).
var leadingDays = regexp.MustCompile(`^(?:(\d{1,4})d)?(.*)$`)

// Parse reads policies[].warnBefore: a list of at most MaxThresholds
// distinct durations, each at least MinThreshold, returned longest first;
// nil when raw is absent.
func Parse(raw any, path *field.Path) ([]time.Duration, field.ErrorList) {
	if raw == nil {
		return nil, nil
	}
	list, ok := raw.([]any)
	if !ok {
		return nil, field.ErrorList{field.Invalid(path, raw, "must be a list of durations")}
	}
	var errs field.ErrorList
	if len(list) > MaxThresholds {
		errs = append(errs, field.TooMany(path, len(list), MaxThresholds))
	}
	var out []time.Duration
	for i, item := range list {
		s, _ := item.(string)
		d, err := parseThreshold(s)
		switch {
		case err != nil:
			errs = append(errs, field.Invalid(path.Index(i), item, err.Error()))
		case slices.Contains(out, d):
			errs = append(errs, field.Duplicate(path.Index(i), item))
		default:
			out = append(out, d)
		}
	}
	slices.Sort(out)
	slices.Reverse(out)
	return out, errs
}

// parseThreshold is the duration s says, days first: at least MinThreshold.
func parseThreshold(s string) (time.Duration, error) {
	m := leadingDays.FindStringSubmatch(s)
	var d time.Duration
	if m[1] != "" {
		n, _ := strconv.Atoi(m[1])
		if n > maxDays {
			return 0, fmt.Errorf("at most %dd", maxDays)
		}
		d = time.Duration(n) * 24 * time.Hour
	}
	if m[2] != "" || m[1] == "" {
		rest, err := time.ParseDuration(m[2])
		if err != nil || rest < 0 {
			return 0, fmt.Errorf("want a duration such as 1h, 30m, 2d or 1d12h")
		}
		d += rest
	}
	if d < MinThreshold {
		return 0, fmt.Errorf("at least %s: a sweep runs every few minutes", durtext.Format(MinThreshold))
	}
	return d, nil
}

// Next is the threshold a sweep at now warns at, for a subject due at due
// with thresholds before, of which sent were warned at already for this
// due time: the smallest threshold now has crossed (one warning, however
// many were crossed since the last sweep), unless it was sent. ok is false
// when there is nothing to warn: no threshold crossed, the due time past,
// or the warning sent. A moved due time comes with no sent thresholds, and
// so warns again.
func Next(due, now time.Time, before, sent []time.Duration) (threshold time.Duration, ok bool) {
	if due.IsZero() || !now.Before(due) {
		return 0, false
	}
	left := due.Sub(now)
	for _, t := range before {
		if left <= t && (!ok || t < threshold) {
			threshold, ok = t, true
		}
	}
	if !ok || slices.Contains(sent, threshold) {
		return 0, false
	}
	return threshold, true
}

// Crossed are the thresholds of before that now has crossed for a subject
// due at due: what a record keeps as sent once Next's warning went out, so
// that a larger threshold crossed at the same time never warns later.
func Crossed(due, now time.Time, before []time.Duration) []time.Duration {
	var out []time.Duration
	for _, t := range before {
		if !now.Before(due.Add(-t)) {
			out = append(out, t)
		}
	}
	return out
}
