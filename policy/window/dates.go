package window

import (
	"fmt"
	"iter"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Bounds of a window's dates, as nsman's CRD declares them. They bound
// what NextOpen may scan: a window's dates are at most MaxDates ranges of
// at most MaxRangeDays days each.
const (
	// MaxDates bounds a window's dates: a year of single days.
	MaxDates = 366
	// MaxRangeDays bounds one range, both days counted: a leap year.
	MaxRangeDays = 366
	// minYear and maxYear bound a date's year: from the Unix epoch to the
	// last year of four digits.
	minYear, maxYear = 1970, 9999
)

// Day is a date of the calendar, no time zone attached: days after
// 1970-01-01. A window's dates are days of its own time zone.
type Day int32

// dayOf is the day of year, month, day (normalised as time.Date does).
func dayOf(year int, month time.Month, day int) Day {
	return Day(time.Date(year, month, day, 0, 0, 0, 0, time.UTC).Unix() / 86400)
}

// date is the year, month and day of d.
func (d Day) date() (int, time.Month, int) {
	return time.Unix(int64(d)*86400, 0).UTC().Date()
}

func (d Day) String() string {
	y, m, dd := d.date()
	return fmt.Sprintf("%04d-%02d-%02d", y, m, dd)
}

// Dates is an inclusive range of days on which a window opens.
type Dates struct{ First, Last Day }

func (r Dates) String() string {
	if r.First == r.Last {
		return r.First.String()
	}
	return r.First.String() + ".." + r.Last.String()
}

// dates reads a window's dates: nil when absent; sorted, overlapping and
// adjacent ranges merged. Every entry is checked; the bounds hold whether
// strict or not, as they bound the work of NextOpen.
func (p *parser) dates(obj map[string]any, path *field.Path) []Dates {
	dp := path.Child("dates")
	raw, ok := obj["dates"]
	if !ok || raw == nil {
		return nil
	}
	list, ok := raw.([]any)
	switch {
	case !ok:
		p.errs = append(p.errs, field.Invalid(dp, raw, "must be a list"))
		return nil
	case len(list) == 0:
		p.errs = append(p.errs, field.Required(dp, "at least one date, YYYY-MM-DD, or a range YYYY-MM-DD..YYYY-MM-DD; leave dates out for a window of every date"))
		return nil
	case len(list) > MaxDates:
		p.errs = append(p.errs, field.TooMany(dp, len(list), MaxDates))
		return nil
	}
	out := make([]Dates, 0, len(list))
	for i, item := range list {
		if r, ok := p.dateRange(item, dp, i); ok {
			out = append(out, r)
		}
	}
	return mergeDates(out)
}

// dateRange reads one entry of dates: YYYY-MM-DD, or YYYY-MM-DD..YYYY-MM-DD
// (read by hand: a manager may hold 375,000 of them, and a regular
// expression and time.Parse took 2 µs each).
func (p *parser) dateRange(item any, list *field.Path, i int) (Dates, bool) {
	path := func() *field.Path { return list.Index(i) } // only for an error
	s, _ := item.(string)
	first, rest, isRange := strings.Cut(s, "..")
	if len(first) != len(time.DateOnly) || isRange && len(rest) != len(time.DateOnly) {
		p.errs = append(p.errs, field.Invalid(path(), item, "must be a date YYYY-MM-DD, or a range of dates YYYY-MM-DD..YYYY-MM-DD, both days included"))
		return Dates{}, false
	}
	a, err := parseDay(first)
	b := a
	if err == nil && isRange {
		b, err = parseDay(rest)
	}
	switch {
	case err != nil:
		p.errs = append(p.errs, field.Invalid(path(), s, err.Error()))
	case b < a:
		p.errs = append(p.errs, field.Invalid(path(), s, "the range ends before it begins: write its first day first"))
	case int(b-a)+1 > MaxRangeDays:
		p.errs = append(p.errs, field.Invalid(path(), s, fmt.Sprintf("a range spans at most %d days, both included; this one spans %d: split it", MaxRangeDays, int(b-a)+1)))
	default:
		return Dates{a, b}, true
	}
	return Dates{}, false
}

// parseDay reads YYYY-MM-DD: a real day of the calendar (no 2026-02-30)
// of a year from 1970 to 9999.
func parseDay(s string) (Day, error) {
	digits := func(from, to int) (int, bool) {
		n := 0
		for i := from; i < to; i++ {
			if s[i] < '0' || s[i] > '9' {
				return 0, false
			}
			n = n*10 + int(s[i]-'0')
		}
		return n, true
	}
	if len(s) != len(time.DateOnly) || s[4] != '-' || s[7] != '-' {
		return 0, fmt.Errorf("%s: must be a date YYYY-MM-DD", s)
	}
	y, okY := digits(0, 4)
	m, okM := digits(5, 7)
	d, okD := digits(8, 10)
	switch {
	case !okY || !okM || !okD:
		return 0, fmt.Errorf("%s: must be a date YYYY-MM-DD", s)
	case m < 1 || m > 12 || d < 1 || d > daysIn(y, time.Month(m)):
		return 0, fmt.Errorf("%s is no day of the calendar", s)
	case y < minYear || y > maxYear:
		return 0, fmt.Errorf("%s: the year must be from %d to %d", s, minYear, maxYear)
	}
	return civilDay(y, m, d), nil
}

// daysIn is the number of days of month in year.
func daysIn(year int, month time.Month) int {
	if month == time.February && year%4 == 0 && (year%100 != 0 || year%400 == 0) {
		return 29
	}
	return [...]int{31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31}[month-1]
}

// civilDay is dayOf for a real date, by arithmetic (Howard Hinnant's
// days_from_civil): time.Date costs more than the rest of a date's parse.
func civilDay(y, m, d int) Day {
	if m <= 2 {
		y--
	}
	era := y / 400 // y ≥ 1969: no negative eras
	yoe := y - era*400
	mp := (m + 9) % 12
	doy := (153*mp+2)/5 + d - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return Day(era*146097 + doe - 719468)
}

// mergeDates sorts ranges and merges those that overlap or touch.
func mergeDates(ranges []Dates) []Dates {
	slices.SortFunc(ranges, func(a, b Dates) int { return int(a.First - b.First) })
	out := ranges[:0]
	for _, r := range ranges {
		if n := len(out); n > 0 && r.First <= out[n-1].Last+1 {
			out[n-1].Last = max(out[n-1].Last, r.Last)
			continue
		}
		out = append(out, r)
	}
	return out
}

// onDate says whether the window's dates include d (every day when it has
// none).
func (w Window) onDate(d Day) bool {
	if len(w.Dates) == 0 {
		return true
	}
	i, found := slices.BinarySearchFunc(w.Dates, d, func(r Dates, d Day) int { return int(r.First - d) })
	return found || (i > 0 && d <= w.Dates[i-1].Last)
}

// candidates yields the days, from from on, on which the window may open,
// in order: for a window without dates, from and the 9 days after (a week
// and more, whatever its days); for one with dates, those of its dates
// from from on that fall on its days. A clock change skips a window on one
// day at most, and NextOpen stops at the first day that opens it, so a
// scan walks past at most the days of ranges none of which falls on the
// window's days (6 a range, weekdays computed, not looked up in a zone: 6
// µs for 365 such ranges, BenchmarkDates).
func (w Window) candidates(from Day) iter.Seq[Day] {
	return func(yield func(Day) bool) {
		if len(w.Dates) == 0 {
			for d := from; d <= from+9; d++ {
				if !yield(d) {
					return
				}
			}
			return
		}
		i, _ := slices.BinarySearchFunc(w.Dates, from, func(r Dates, d Day) int { return int(r.Last - d) })
		for _, r := range w.Dates[i:] {
			for d := max(r.First, from); d <= r.Last; d++ {
				if len(w.Days) > 0 && !slices.Contains(w.Days, d.weekday()) {
					continue // as span would say, without its time.Date
				}
				if !yield(d) {
					return
				}
			}
		}
	}
}

// opensOnSomeDate says whether one of the window's dates falls on one of
// its days: false when none does (it never opens). A range of a week or
// more has every day of the week.
func (w Window) opensOnSomeDate() bool {
	if len(w.Days) == 0 {
		return true
	}
	for _, r := range w.Dates {
		for d := r.First; d <= r.Last && d < r.First+7; d++ {
			if slices.Contains(w.Days, d.weekday()) {
				return true
			}
		}
	}
	return false
}

// weekday is d's day of the week (1970-01-01 was a Thursday).
func (d Day) weekday() time.Weekday {
	return time.Weekday((int64(d)%7 + 7 + 4) % 7)
}

// describeDates lists at most three of dates, and how many more.
func describeDates(dates []Dates) string {
	const shown = 3
	parts := make([]string, 0, shown+1)
	for i, r := range dates {
		if i == shown {
			parts = append(parts, fmt.Sprintf("%d more", len(dates)-shown))
			break
		}
		parts = append(parts, r.String())
	}
	return strings.Join(parts, ",")
}

// PastDates reports, at now, each of windows (policies[].windows at path)
// whose dates are all past: it never opens again (Past).
func PastDates(windows []Window, path *field.Path, now time.Time) field.ErrorList {
	var errs field.ErrorList
	for j, w := range windows {
		if Past(w, now) {
			last := w.Dates[len(w.Dates)-1].Last
			errs = append(errs, field.Invalid(path.Index(j).Child("dates"), last.String(),
				fmt.Sprintf("every date is past at %s: the window never opens again", now.UTC().Format(time.RFC3339))))
		}
	}
	return errs
}
