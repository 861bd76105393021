package window

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// parseOne parses one window, as written in a manifest.
func parseOne(w map[string]any) ([]Window, field.ErrorList) {
	return Parse([]any{w}, field.NewPath("windows"), true)
}

// stringList is s as a manifest's list.
func stringList(s ...string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}

// TestParseDates: a window's dates, days and ranges, sorted and merged;
// alone it is open all day; each malformed, impossible, inverted, too
// long or out-of-bounds entry is refused at its index, with a message that
// says why.
func TestParseDates(t *testing.T) {
	many := make([]string, MaxDates)
	for i := range many {
		many[i] = dayOf(2026, 1, 1+2*i).String()
	}
	tests := []struct {
		name  string
		w     map[string]any
		want  string // the window's String, when valid
		field string // the field of the error, when not
		msg   string
	}{
		{name: "a range alone, all day", w: map[string]any{"dates": stringList("2026-12-24..2027-01-01"), "timeZone": "Europe/Berlin"}, want: "on 2026-12-24..2027-01-01 all day Europe/Berlin"},
		{name: "days and ranges, sorted and merged", w: map[string]any{"dates": stringList("2027-01-01", "2026-12-24..2026-12-26", "2026-12-27..2026-12-31", "2026-12-25")}, want: "on 2026-12-24..2027-01-01 all day UTC"},
		{name: "with hours and days", w: map[string]any{"dates": stringList("2026-12-24..2027-01-01"), "days": []any{"Sat", "Sun"}, "from": "20:00", "to": "07:00"}, want: "Sat,Sun on 2026-12-24..2027-01-01 20:00-07:00 UTC"},
		{name: "many, three shown", w: map[string]any{"dates": stringList("2026-01-01", "2026-03-01", "2026-05-01", "2026-07-01", "2026-09-01")}, want: "on 2026-01-01,2026-03-01,2026-05-01,2 more all day UTC"},
		{name: "366 dates", w: map[string]any{"dates": stringList(many...)}, want: "on 2026-01-01,2026-01-03,2026-01-05,363 more all day UTC"},
		{name: "a range of 366 days", w: map[string]any{"dates": stringList("2028-01-01..2028-12-31")}, want: "on 2028-01-01..2028-12-31 all day UTC"},
		{name: "years 1970 and 9999", w: map[string]any{"dates": stringList("1970-01-01", "9999-12-31")}, want: "on 1970-01-01,9999-12-31 all day UTC"},
		{name: "367 dates", w: map[string]any{"dates": stringList(append(many, "2030-01-01")...)}, field: "windows[0].dates", msg: "must have at most 366 items"},
		{name: "a range of 367 days", w: map[string]any{"dates": stringList("2026-01-01..2027-01-02")}, field: "windows[0].dates[0]", msg: "a range spans at most 366 days, both included; this one spans 367"},
		{name: "no such day", w: map[string]any{"dates": stringList("2026-12-24", "2026-02-29")}, field: "windows[0].dates[1]", msg: "2026-02-29 is no day of the calendar"},
		{name: "no such month", w: map[string]any{"dates": stringList("2026-13-01")}, field: "windows[0].dates[0]", msg: "no day of the calendar"},
		{name: "inverted", w: map[string]any{"dates": stringList("2027-01-01..2026-12-24")}, field: "windows[0].dates[0]", msg: "the range ends before it begins"},
		{name: "year 1969", w: map[string]any{"dates": stringList("1969-12-31")}, field: "windows[0].dates[0]", msg: "the year must be from 1970 to 9999"},
		{name: "year 10000", w: map[string]any{"dates": stringList("10000-01-01")}, field: "windows[0].dates[0]", msg: "must be a date YYYY-MM-DD"},
		{name: "two digits", w: map[string]any{"dates": stringList("26-12-24")}, field: "windows[0].dates[0]", msg: "must be a date YYYY-MM-DD"},
		{name: "an open range", w: map[string]any{"dates": stringList("2026-12-24..")}, field: "windows[0].dates[0]", msg: "must be a date YYYY-MM-DD"},
		{name: "a time", w: map[string]any{"dates": stringList("2026-12-24T00:00:00Z")}, field: "windows[0].dates[0]", msg: "must be a date YYYY-MM-DD"},
		{name: "a number", w: map[string]any{"dates": []any{int64(20261224)}}, field: "windows[0].dates[0]", msg: "must be a date YYYY-MM-DD"},
		{name: "empty", w: map[string]any{"dates": []any{}}, field: "windows[0].dates", msg: "at least one date"},
		{name: "a string", w: map[string]any{"dates": "2026-12-24"}, field: "windows[0].dates", msg: "must be a list"},
		{name: "from without to", w: map[string]any{"dates": stringList("2026-12-24"), "from": "20:00"}, field: "windows[0].to", msg: "Required"},
		{name: "neither dates nor hours", w: map[string]any{"days": []any{"Sat"}}, field: "windows[0].from", msg: "a window of dates alone"},
		{name: "no date on its days", w: map[string]any{"dates": stringList("2026-12-24..2026-12-25", "2026-12-31"), "days": []any{"Sat", "Sun"}}, field: "windows[0].dates", msg: "none of the dates falls on one of the window's days"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ws, errs := parseOne(tt.w)
			if tt.field == "" {
				if len(errs) > 0 || len(ws) != 1 {
					t.Fatalf("errors %v, want %s", errs, tt.want)
				}
				if got := ws[0].String(); got != tt.want {
					t.Errorf("parsed as %q, want %q", got, tt.want)
				}
				return
			}
			for _, e := range errs {
				if e.Field == tt.field && strings.Contains(e.Error(), tt.msg) {
					return
				}
			}
			t.Errorf("errors %v, want one at %s saying %q", errs, tt.field, tt.msg)
		})
	}
}

// TestDayWeekday: Day's own arithmetic agrees with time's, across the
// years nsman admits.
func TestDayWeekday(t *testing.T) {
	for _, s := range []string{"1970-01-01", "1999-12-31", "2026-12-24", "2027-01-01", "2028-02-29", "9999-12-31"} {
		d, err := parseDay(s)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := time.Parse(time.DateOnly, s)
		if d.weekday() != want.Weekday() || d.String() != s {
			t.Errorf("%s: %s, %s; want %s", s, d, d.weekday(), want.Weekday())
		}
	}
}

// dated is a window on dates (all day when from equals to).
func dated(loc *time.Location, from, to int, days []time.Weekday, dates ...string) Window {
	w := Window{Days: days, From: from, To: to, Location: loc}
	for _, s := range dates {
		first, last, _ := strings.Cut(s, "..")
		a, err := parseDay(first)
		if err != nil {
			panic(err)
		}
		b := a
		if last != "" {
			if b, err = parseDay(last); err != nil {
				panic(err)
			}
		}
		w.Dates = append(w.Dates, Dates{a, b})
	}
	return w
}

// TestDatesOpen: when a window on dates is open, and when it next opens,
// through a year's end, both of Berlin's 2026 clock changes, its days, and
// after its last date (never: zero).
func TestDatesOpen(t *testing.T) {
	berlin := zone(t, "Europe/Berlin")
	holidays := dated(berlin, 0, 0, nil, "2026-12-24..2027-01-01")
	nights := dated(berlin, 20*60, 7*60, nil, "2026-12-24..2027-01-01")
	weekend := dated(berlin, 0, 0, []time.Weekday{time.Saturday, time.Sunday}, "2026-12-24..2027-01-01")
	saturdays := dated(time.UTC, 9*60, 17*60, []time.Weekday{time.Saturday}, "2026-12-01..2026-12-03", "2027-03-01..2027-03-31")
	tests := []struct {
		name      string
		window    Window
		at        string
		nextOpen  string // "" none
		openUntil string // "" closed
	}{
		{"holidays: the evening before", holidays, "2026-12-23T22:59:00Z", "2026-12-23T23:00:00Z", ""},
		{"holidays: from midnight", holidays, "2026-12-23T23:00:00Z", "2026-12-23T23:00:00Z", "2027-01-01T23:00:00Z"},
		{"holidays: across the year's end", holidays, "2026-12-31T23:30:00Z", "2026-12-31T23:30:00Z", "2027-01-01T23:00:00Z"},
		{"holidays: the last minute", holidays, "2027-01-01T22:59:00Z", "2027-01-01T22:59:00Z", "2027-01-01T23:00:00Z"},
		{"holidays: over, never again", holidays, "2027-01-01T23:00:00Z", "", ""},
		{"holidays: a year ahead", holidays, "2025-12-24T12:00:00Z", "2026-12-23T23:00:00Z", ""},
		{"holiday nights: the last runs into a date it does not name", nights, "2027-01-02T05:59:00Z", "2027-01-02T05:59:00Z", "2027-01-02T06:00:00Z"},
		{"holiday nights: over", nights, "2027-01-02T06:00:00Z", "", ""},
		{"holiday nights: a day of them", nights, "2026-12-28T12:00:00Z", "2026-12-28T19:00:00Z", ""},
		{"holiday nights: the first opens on the first date", nights, "2026-12-23T12:00:00Z", "2026-12-24T19:00:00Z", ""},
		{"holiday weekend: a Thursday", weekend, "2026-12-24T12:00:00Z", "2026-12-25T23:00:00Z", ""},
		{"holiday weekend: Saturday to Sunday's end", weekend, "2026-12-26T12:00:00Z", "2026-12-26T12:00:00Z", "2026-12-27T23:00:00Z"},
		{"holiday weekend: no weekend left", weekend, "2026-12-28T12:00:00Z", "", ""},
		{"Saturdays: none in a range, the next in the next", saturdays, "2026-11-30T12:00:00Z", "2027-03-06T09:00:00Z", ""},
		// 2026-03-29: 02:00 CET jumps to 03:00 CEST; a day of 23 hours.
		{"Berlin spring: all day, 23 hours", dated(berlin, 0, 0, nil, "2026-03-29"), "2026-03-29T21:59:00Z", "2026-03-29T21:59:00Z", "2026-03-29T22:00:00Z"},
		{"Berlin spring: all day, opens at CET midnight", dated(berlin, 0, 0, nil, "2026-03-29"), "2026-03-28T12:00:00Z", "2026-03-28T23:00:00Z", ""},
		{"Berlin spring: from in the jump opens as it ends", dated(berlin, 2*60+30, 3*60+30, nil, "2026-03-29"), "2026-03-28T12:00:00Z", "2026-03-29T01:00:00Z", ""},
		{"Berlin spring: a window the jump skips never opens", dated(berlin, 2*60, 2*60+30, nil, "2026-03-29"), "2026-03-28T12:00:00Z", "", ""},
		{"Berlin spring: a range across it", dated(berlin, 2*60+30, 3*60+30, nil, "2026-03-28..2026-03-30"), "2026-03-28T02:30:00Z", "2026-03-29T01:00:00Z", ""},
		// 2026-10-25: 03:00 CEST falls back to 02:00 CET; a day of 25 hours.
		{"Berlin autumn: all day, 25 hours", dated(berlin, 0, 0, nil, "2026-10-25"), "2026-10-24T22:00:00Z", "2026-10-24T22:00:00Z", "2026-10-25T23:00:00Z"},
		{"Berlin autumn: open through the second 02:30", dated(berlin, 2*60, 4*60, nil, "2026-10-25"), "2026-10-25T01:30:00Z", "2026-10-25T01:30:00Z", "2026-10-25T03:00:00Z"},
		{"Berlin autumn: the first 02:00", dated(berlin, 2*60, 4*60, nil, "2026-10-25"), "2026-10-24T12:00:00Z", "2026-10-25T00:00:00Z", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			at := utc(tt.at)
			next := NextOpen([]Window{tt.window}, at)
			if tt.nextOpen == "" && !next.IsZero() || tt.nextOpen != "" && !next.Equal(utc(tt.nextOpen)) {
				t.Errorf("NextOpen(%s, %s) = %s, want %q", tt.window, tt.at, next.UTC().Format(time.RFC3339), tt.nextOpen)
			}
			until := OpenUntil([]Window{tt.window}, at)
			if tt.openUntil == "" && !until.IsZero() || tt.openUntil != "" && !until.Equal(utc(tt.openUntil)) {
				t.Errorf("OpenUntil(%s, %s) = %s, want %q", tt.window, tt.at, until.UTC().Format(time.RFC3339), tt.openUntil)
			}
			if past := Past(tt.window, at); past != (tt.nextOpen == "") {
				t.Errorf("Past(%s, %s) = %t", tt.window, tt.at, past)
			}
		})
	}
}

// TestDatesBeside: a window on dates beside one without: the earliest
// opening of the two, and a holiday that carries a night on to its end.
func TestDatesBeside(t *testing.T) {
	berlin := zone(t, "Europe/Berlin")
	nightly := Window{From: 20 * 60, To: 7 * 60, Location: berlin}
	holidays := dated(berlin, 0, 0, nil, "2026-12-24..2027-01-01")
	both := []Window{nightly, holidays}
	// 12:00 Berlin on 2026-12-23: the night opens at 20:00, before the
	// holidays' midnight.
	if got := NextOpen(both, utc("2026-12-23T11:00:00Z")); !got.Equal(utc("2026-12-23T19:00:00Z")) {
		t.Errorf("NextOpen: %s, want the night's 20:00", got)
	}
	// At 12:00 on 2026-12-28 the holidays are open until their end, the
	// later close.
	if got := OpenUntil(both, utc("2026-12-28T11:00:00Z")); !got.Equal(utc("2027-01-01T23:00:00Z")) {
		t.Errorf("OpenUntil: %s, want the holidays' end", got)
	}
	if w, ok := Open(both, utc("2026-12-28T11:00:00Z")); !ok || len(w.Dates) == 0 {
		t.Errorf("Open: %s, want the holidays", w)
	}
	if d := Describe(both); d != "every day 20:00-07:00 Europe/Berlin; on 2026-12-24..2027-01-01 all day Europe/Berlin" {
		t.Errorf("Describe: %q", d)
	}
}

// TestDatesFarApart: the next opening is found however far ahead the next
// date lies, and past dates are skipped without being walked.
func TestDatesFarApart(t *testing.T) {
	var dates []string
	for y := 1970; y < 1970+MaxDates-1; y++ {
		dates = append(dates, fmt.Sprintf("%04d-06-01..%04d-06-03", y, y))
	}
	dates = append(dates, "9999-12-31")
	w := dated(time.UTC, 9*60, 10*60, []time.Weekday{time.Sunday}, dates...)
	// 2026-06-01..03 is Mon to Wed, 2027's Tue to Thu, 2029's Fri to Sun.
	if got := NextOpen([]Window{w}, utc("2026-05-01T00:00:00Z")); !got.Equal(utc("2029-06-03T09:00:00Z")) {
		t.Errorf("NextOpen: %s, want 2029-06-03 09:00", got)
	}
}

// TestCivilDay: the arithmetic parseDay uses agrees with time.Date on
// every day from 1970 to 9999.
func TestCivilDay(t *testing.T) {
	for d := dayOf(1970, 1, 1); d <= dayOf(9999, 12, 31); d++ {
		y, m, dd := d.date()
		if dd > daysIn(y, m) {
			t.Fatalf("%s: day %d of a month of %d", d, dd, daysIn(y, m))
		}
		if got := civilDay(y, int(m), dd); got != d {
			t.Fatalf("civilDay(%s) = %d, want %d", d, got, d)
		}
	}
}
