// Package window is when a policy may act: windows of the week, or of
// dates of the calendar, in a time zone, as spec.policies[].windows
// declares them, parsed and asked when they open and close. It imports
// nothing of nsman.
package window

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Window is a time of the week in which a policy may act: on Days (every
// day when empty) that are among Dates (every date when empty), from From
// to To, wall clock in Location. A window whose To is not after its From
// crosses midnight: it closes on the next day, whatever that day is; one
// whose From equals its To (a window of dates alone: 00:00 to 00:00) is
// open all day.
type Window struct {
	Days []time.Weekday
	// Dates are the days of the calendar, in Location, the window opens
	// on: sorted, none overlapping or touching another.
	Dates []Dates
	// From and To are minutes after midnight.
	From, To int
	Location *time.Location
}

// dayNames are the days a window names, as spec.policies[].windows[].days
// spells them, by time.Weekday.
var dayNames = []string{"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"}

func (w Window) String() string {
	days := "every day"
	if len(w.Days) > 0 {
		names := make([]string, 0, len(w.Days))
		for _, d := range w.Days {
			names = append(names, dayNames[d])
		}
		days = strings.Join(names, ",")
	}
	if len(w.Dates) > 0 {
		if len(w.Days) == 0 {
			days = "on " + describeDates(w.Dates)
		} else {
			days += " on " + describeDates(w.Dates)
		}
	}
	hours := clock(w.From) + "-" + clock(w.To)
	if w.allDay() {
		hours = "all day"
	}
	return fmt.Sprintf("%s %s %s", days, hours, w.Location)
}

// allDay says whether the window is open all day on its dates: a window of
// dates alone.
func (w Window) allDay() bool { return w.From == w.To }

func clock(minutes int) string { return fmt.Sprintf("%02d:%02d", minutes/60, minutes%60) }

// span is when the window opened on date (year, month, day in its
// location) and when it closes, or false when it does not open that day.
func (w Window) span(year int, month time.Month, day int) (open, close time.Time, ok bool) {
	date := time.Date(year, month, day, 12, 0, 0, 0, w.Location)
	if len(w.Days) > 0 && !slices.Contains(w.Days, date.Weekday()) || !w.onDate(dayOf(year, month, day)) {
		return time.Time{}, time.Time{}, false
	}
	open = wallClock(year, month, day, w.From, w.Location)
	if w.To <= w.From {
		// Crosses midnight: closes the next day (the 1st after a month's
		// last, wallClock wants a real date).
		year, month, day = date.AddDate(0, 0, 1).Date()
	}
	return open, wallClock(year, month, day, w.To, w.Location), true
}

// wallClock is the instant of minutes after midnight on that date in loc.
// Across a daylight-saving change it is defined, whatever time.Date picks:
// a wall-clock time that does not exist (the clock jumps over it) is the
// instant the jump ends; one that happens twice is the first of the two.
func wallClock(year int, month time.Month, day, minutes int, loc *time.Location) time.Time {
	t := time.Date(year, month, day, minutes/60, minutes%60, 0, 0, loc)
	// Wall clocks compared as if they were UTC: date and time of day, so
	// that a skipped midnight (the clock jumps from 23:59 to 01:00) is seen.
	want := time.Date(year, month, day, minutes/60, minutes%60, 0, 0, time.UTC)
	wall := func(u time.Time) time.Time {
		return time.Date(u.Year(), u.Month(), u.Day(), u.Hour(), u.Minute(), 0, 0, time.UTC)
	}
	if got := wall(t); !got.Equal(want) {
		// Skipped: the jump is the bound of the zone in effect at t that
		// lies between the wall clock asked for and t.
		start, end := t.ZoneBounds()
		if got.After(want) {
			return start
		}
		return end
	}
	for _, back := range []time.Duration{2 * time.Hour, time.Hour, 30 * time.Minute} {
		if earlier := t.Add(-back).In(loc); wall(earlier).Equal(want) {
			return earlier
		}
	}
	return t
}

// NextOpen is the first instant at or after t in which one of windows is
// open: t itself when one is, and zero when there are no windows or none
// opens again (its dates are past).
func NextOpen(windows []Window, t time.Time) time.Time {
	var next time.Time
	for _, w := range windows {
		// From the day before (a window that crosses midnight may still be
		// open): a window without dates to a week and a day ahead, one with
		// dates through its dates; days stepped at noon, which no clock
		// skips.
		for d := range w.candidates(localDay(t, w.Location) - 1) {
			open, close, ok := w.span(d.date())
			if !ok || !close.After(t) || !close.After(open) {
				continue // closed that day, or a window the clock jumps over
			}
			if !open.After(t) {
				return t
			}
			if next.IsZero() || open.Before(next) {
				next = open
			}
			break // later days open later
		}
	}
	return next
}

// localDay is the day of t in loc.
func localDay(t time.Time, loc *time.Location) Day {
	return dayOf(t.In(loc).Date())
}

// Describe says which windows a policy may act in.
func Describe(windows []Window) string {
	parts := make([]string, 0, len(windows))
	for _, w := range windows {
		parts = append(parts, w.String())
	}
	return strings.Join(parts, "; ")
}

// OpenUntil is when the windows open at t close: the latest close of
// those open at t, zero when none is. A window open all day on its dates
// closes at the end of the last of the dates that follow on from t's.
func OpenUntil(windows []Window, t time.Time) time.Time {
	var until time.Time
	for _, w := range windows {
		today := localDay(t, w.Location)
		// The day before (a window that crosses midnight) and the day of t.
		for d := today - 1; d <= today; d++ {
			open, close, ok := w.span(d.date())
			if ok && !open.After(t) && close.After(t) {
				if w.allDay() {
					_, close, _ = w.span(w.lastInRun(d).date())
				}
				if close.After(until) {
					until = close
				}
			}
		}
	}
	return until
}

// lastInRun is, for a window open all day, the last of the days that
// follow on from d, on each of which it is open: the end of d's range of
// dates, or sooner the last of its days in a row (at most 7 steps).
func (w Window) lastInRun(d Day) Day {
	if len(w.Days) == 0 {
		i, _ := slices.BinarySearchFunc(w.Dates, d, func(r Dates, d Day) int { return int(r.Last - d) })
		if i < len(w.Dates) {
			return w.Dates[i].Last
		}
		return d
	}
	for range 7 {
		next := d + 1
		if !w.onDate(next) || !slices.Contains(w.Days, next.weekday()) {
			break
		}
		d = next
	}
	return d
}

// Open is the one of windows open at t that stays open longest, for
// messages; false when none is.
func Open(windows []Window, t time.Time) (Window, bool) {
	until := OpenUntil(windows, t)
	for _, w := range windows {
		if OpenUntil([]Window{w}, t).Equal(until) && !until.IsZero() {
			return w, true
		}
	}
	return Window{}, false
}

// Past says whether w has dates and none of them opens it at or after t:
// a window that never opens again.
func Past(w Window, t time.Time) bool {
	return len(w.Dates) > 0 && NextOpen([]Window{w}, t).IsZero()
}

// NoMoreOpen is a policy's detail when none of its windows opens again:
// their dates are past.
func NoMoreOpen(windows []Window) string {
	return fmt.Sprintf("outside its windows (%s), which open no more: their dates are past", Describe(windows))
}
