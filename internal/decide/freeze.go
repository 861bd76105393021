package decide

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

// Freeze is a time in which nothing acts (--freeze, --freeze-file): a
// policy due then waits, its next due time the freeze's end.
type Freeze struct {
	Start, End time.Time
}

func (f Freeze) String() string {
	return f.Start.UTC().Format(time.RFC3339) + "/" + f.End.UTC().Format(time.RFC3339)
}

// ParseFreeze parses START/END, each an RFC 3339 time or a date
// YYYY-MM-DD in loc: a START date is the start of that day, an END date
// the end of it (2026-12-24/2026-12-26 is three whole days).
func ParseFreeze(s string, loc *time.Location) (Freeze, error) {
	start, end, ok := strings.Cut(strings.TrimSpace(s), "/")
	if !ok {
		return Freeze{}, fmt.Errorf("%q: want START/END, each an RFC 3339 time or a date YYYY-MM-DD", s)
	}
	var f Freeze
	var err error
	if f.Start, err = freezeBound(start, loc, 0); err != nil {
		return Freeze{}, fmt.Errorf("%q: start: %w", s, err)
	}
	if f.End, err = freezeBound(end, loc, 1); err != nil {
		return Freeze{}, fmt.Errorf("%q: end: %w", s, err)
	}
	if !f.End.After(f.Start) {
		return Freeze{}, fmt.Errorf("%q: ends before it starts", s)
	}
	return f, nil
}

// freezeBound parses one side of a freeze: a date is its start, days
// later (1: its end).
func freezeBound(s string, loc *time.Location, days int) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	d, err := time.ParseInLocation(time.DateOnly, s, loc)
	if err != nil {
		return time.Time{}, fmt.Errorf("%q is neither an RFC 3339 time (2026-12-24T18:00:00+01:00) nor a date (2026-12-24)", s)
	}
	return d.AddDate(0, 0, days), nil
}

// ReadFreezes reads a freeze calendar (--freeze-file): one START/END a
// line, blank lines and those starting with # skipped, a # after a range
// a comment too. An error names the line.
func ReadFreezes(r io.Reader, name string, loc *time.Location) ([]Freeze, error) {
	var out []Freeze
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line, _, _ := strings.Cut(sc.Text(), "#")
		if strings.TrimSpace(line) == "" {
			continue
		}
		f, err := ParseFreeze(line, loc)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", name, n, err)
		}
		out = append(out, f)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return out, nil
}

// FrozenUntil reports whether now is in one of freezes, and then when the
// freezes that hold it, one running into the next, end.
func FrozenUntil(freezes []Freeze, now time.Time) (time.Time, bool) {
	var end time.Time
	for changed := true; changed; {
		changed = false
		for _, f := range freezes {
			at := now
			if !end.IsZero() {
				at = end
			}
			if !at.Before(f.Start) && at.Before(f.End) && f.End.After(end) {
				end, changed = f.End, true
			}
		}
	}
	return end, !end.IsZero()
}

// LoadFreezes is the freezes of --freeze (ranges) and --freeze-file
// (file, "" for none), dates read in --freeze-time-zone (zone): what
// nsman sweep and nsman due freeze alike. An error names the flag.
func LoadFreezes(ranges []string, file, zone string) ([]Freeze, error) {
	loc, err := time.LoadLocation(zone)
	if err != nil || zone == "" || zone == "Local" {
		return nil, fmt.Errorf("--freeze-time-zone %q: want an IANA time zone such as Europe/Berlin or UTC", zone)
	}
	var out []Freeze
	for _, s := range ranges {
		f, err := ParseFreeze(s, loc)
		if err != nil {
			return nil, fmt.Errorf("--freeze %w", err)
		}
		out = append(out, f)
	}
	if file == "" {
		return out, nil
	}
	r, err := os.Open(file)
	if err != nil {
		return nil, fmt.Errorf("--freeze-file: %w", err)
	}
	defer r.Close()
	fromFile, err := ReadFreezes(r, file, loc)
	if err != nil {
		return nil, fmt.Errorf("--freeze-file %w", err)
	}
	return append(out, fromFile...), nil
}
