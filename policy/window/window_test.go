package window

import (
	"testing"
	"time"
)

func zone(t *testing.T, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

func utc(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

// nextOpen across the week, midnight, and both 2026 daylight-saving
// changes in Europe/Berlin and America/New_York: a wall-clock time the
// clock jumps over is the end of the jump, one it passes twice the first.
func TestNextOpen(t *testing.T) {
	berlin, newYork := zone(t, "Europe/Berlin"), zone(t, "America/New_York")
	santiago, havana := zone(t, "America/Santiago"), zone(t, "America/Havana")
	weekdays := []time.Weekday{time.Monday, time.Tuesday, time.Wednesday, time.Thursday, time.Friday}
	tests := []struct {
		name   string
		window Window
		at     string
		want   string
	}{
		{"office hours, on a Saturday", Window{Days: weekdays, From: 9 * 60, To: 17 * 60, Location: berlin}, "2026-11-28T10:00:00Z", "2026-11-30T08:00:00Z"},
		{"office hours, open", Window{Days: weekdays, From: 9 * 60, To: 17 * 60, Location: berlin}, "2026-11-30T15:59:00Z", "2026-11-30T15:59:00Z"},
		{"office hours, just closed", Window{Days: weekdays, From: 9 * 60, To: 17 * 60, Location: berlin}, "2026-11-30T16:00:00Z", "2026-12-01T08:00:00Z"},
		{"across midnight, open the morning after", Window{Days: []time.Weekday{time.Saturday}, From: 22 * 60, To: 6 * 60, Location: time.UTC}, "2026-11-29T05:59:00Z", "2026-11-29T05:59:00Z"},
		{"across midnight, closed", Window{Days: []time.Weekday{time.Saturday}, From: 22 * 60, To: 6 * 60, Location: time.UTC}, "2026-11-29T06:00:00Z", "2026-12-05T22:00:00Z"},
		{"every day", Window{From: 1 * 60, To: 2 * 60, Location: time.UTC}, "2026-11-29T03:00:00Z", "2026-11-30T01:00:00Z"},
		{"across midnight at a month's end, closed", Window{From: 20 * 60, To: 7 * 60, Location: berlin}, "2026-12-01T13:00:00Z", "2026-12-01T19:00:00Z"},
		{"across midnight at a month's end, open", Window{From: 20 * 60, To: 7 * 60, Location: berlin}, "2026-12-01T05:00:00Z", "2026-12-01T05:00:00Z"},
		{"across midnight at a year's end, closed", Window{From: 22 * 60, To: 6 * 60, Location: time.UTC}, "2027-01-01T07:00:00Z", "2027-01-01T22:00:00Z"},
		{"across midnight at a year's end, open", Window{From: 22 * 60, To: 6 * 60, Location: time.UTC}, "2027-01-01T05:00:00Z", "2027-01-01T05:00:00Z"},
		// Berlin, 2026-03-29: 02:00 CET jumps to 03:00 CEST (01:00 UTC).
		{"Berlin spring: from in the jump opens as it ends", Window{From: 2*60 + 30, To: 3*60 + 30, Location: berlin}, "2026-03-29T00:00:00Z", "2026-03-29T01:00:00Z"},
		{"Berlin spring: the day after, CEST", Window{From: 2*60 + 30, To: 3*60 + 30, Location: berlin}, "2026-03-29T01:30:00Z", "2026-03-30T00:30:00Z"},
		{"Berlin spring: 01:30 CET, before the jump", Window{From: 1*60 + 30, To: 4 * 60, Location: berlin}, "2026-03-28T23:00:00Z", "2026-03-29T00:30:00Z"},
		// Berlin, 2026-10-25: 03:00 CEST falls back to 02:00 CET (01:00 UTC).
		{"Berlin autumn: 02:30 happens twice, the first", Window{From: 2*60 + 30, To: 4 * 60, Location: berlin}, "2026-10-25T00:00:00Z", "2026-10-25T00:30:00Z"},
		{"Berlin autumn: open through the second 02:45", Window{From: 2*60 + 30, To: 4 * 60, Location: berlin}, "2026-10-25T01:45:00Z", "2026-10-25T01:45:00Z"},
		{"Berlin autumn: closed at 04:00 CET", Window{From: 2*60 + 30, To: 4 * 60, Location: berlin}, "2026-10-25T03:00:00Z", "2026-10-26T01:30:00Z"},
		// New York, 2026-03-08: 02:00 EST jumps to 03:00 EDT (07:00 UTC).
		{"New York spring: a window inside the jump does not open that day", Window{From: 2 * 60, To: 2*60 + 30, Location: newYork}, "2026-03-08T06:00:00Z", "2026-03-09T06:00:00Z"},
		{"New York spring: to in the jump closes as it ends", Window{From: 1 * 60, To: 2*60 + 30, Location: newYork}, "2026-03-08T06:59:00Z", "2026-03-08T06:59:00Z"},
		// New York, 2026-11-01: 02:00 EDT falls back to 01:00 EST (06:00 UTC).
		{"New York autumn: 01:00 happens twice, the first", Window{From: 1 * 60, To: 1*60 + 30, Location: newYork}, "2026-11-01T04:00:00Z", "2026-11-01T05:00:00Z"},
		{"New York autumn: the second 01:10 is past the window", Window{From: 1 * 60, To: 1*60 + 30, Location: newYork}, "2026-11-01T06:10:00Z", "2026-11-02T06:00:00Z"},
		// Santiago, 2026-09-06, and Havana, 2026-03-08: the clock jumps
		// from 23:59 to 01:00, midnight is skipped.
		{"Santiago: a window from a skipped midnight opens at 01:00", Window{From: 0, To: 6 * 60, Location: santiago}, "2026-09-05T12:00:00Z", "2026-09-06T04:00:00Z"},
		{"Santiago: closed the evening before", Window{From: 0, To: 6 * 60, Location: santiago}, "2026-09-06T01:00:00Z", "2026-09-06T04:00:00Z"},
		{"Havana: a Sunday window from a skipped midnight", Window{Days: []time.Weekday{time.Sunday}, From: 0, To: 2 * 60, Location: havana}, "2026-03-08T04:30:00Z", "2026-03-08T05:00:00Z"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := NextOpen([]Window{tt.window}, utc(tt.at)); !got.Equal(utc(tt.want)) {
				t.Errorf("NextOpen(%s, %s) = %s, want %s", tt.window, tt.at, got.UTC().Format(time.RFC3339), tt.want)
			}
		})
	}
	// The earliest of several windows.
	two := []Window{{Days: []time.Weekday{time.Sunday}, From: 10 * 60, To: 11 * 60, Location: time.UTC}, {From: 23 * 60, To: 23*60 + 30, Location: time.UTC}}
	if got := NextOpen(two, utc("2026-11-28T12:00:00Z")); !got.Equal(utc("2026-11-28T23:00:00Z")) {
		t.Errorf("two windows: %s, want the Saturday night one", got)
	}
}

// openUntil is when the windows open at a time close: across midnight, a
// change of clocks, and of two open at once the later; zero when none is
// open, as at the very instant one closes.
func TestOpenUntil(t *testing.T) {
	berlin := zone(t, "Europe/Berlin")
	nights := Window{From: 20 * 60, To: 7 * 60, Location: berlin}
	saturday := Window{Days: []time.Weekday{time.Saturday}, From: 7 * 60, To: 20 * 60, Location: berlin}
	tests := []struct {
		name    string
		windows []Window
		at      string
		want    string // "" for none open
	}{
		{"closed at noon", []Window{nights}, "2026-11-24T12:00:00Z", ""},
		{"open as it opens", []Window{nights}, "2026-11-24T19:00:00Z", "2026-11-25T06:00:00Z"},
		{"open after midnight", []Window{nights}, "2026-11-24T23:30:00Z", "2026-11-25T06:00:00Z"},
		{"closed as it closes", []Window{nights}, "2026-11-25T06:00:00Z", ""},
		// 2026-10-25: opened 20:00 CEST (18:00 UTC), closes 07:00 CET.
		{"open through the autumn change", []Window{nights}, "2026-10-25T01:30:00Z", "2026-10-25T06:00:00Z"},
		// 2026-03-29: opened 20:00 CET (19:00 UTC), closes 07:00 CEST.
		{"open through the spring change", []Window{nights}, "2026-03-29T01:30:00Z", "2026-03-29T05:00:00Z"},
		{"a Saturday window on a Saturday", []Window{saturday}, "2026-11-28T10:00:00Z", "2026-11-28T19:00:00Z"},
		{"a Saturday window on a Friday", []Window{saturday}, "2026-11-27T10:00:00Z", ""},
		{"of two open, the later close", []Window{{From: 18 * 60, To: 23 * 60, Location: time.UTC}, nights}, "2026-11-24T19:30:00Z", "2026-11-25T06:00:00Z"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := OpenUntil(tt.windows, utc(tt.at))
			if (tt.want == "" && !got.IsZero()) || (tt.want != "" && !got.Equal(utc(tt.want))) {
				t.Errorf("OpenUntil(%s) = %v, want %q", tt.at, got, tt.want)
			}
			if open := NextOpen(tt.windows, utc(tt.at)).Equal(utc(tt.at)); open != (tt.want != "") {
				t.Errorf("nextOpen says open %v, openUntil %v", open, got)
			}
		})
	}
}
