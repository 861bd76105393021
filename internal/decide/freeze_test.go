package decide

import (
	"os"
	"strings"
	"testing"
	"time"
)

func TestParseFreeze(t *testing.T) {
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		in         string
		loc        *time.Location
		start, end string
		err        string
	}{
		{in: "2026-12-24/2026-12-26", loc: time.UTC, start: "2026-12-24T00:00:00Z", end: "2026-12-27T00:00:00Z"},
		{in: "2026-12-24/2026-12-26", loc: berlin, start: "2026-12-23T23:00:00Z", end: "2026-12-26T23:00:00Z"},
		// A date range across a daylight-saving change: whole local days.
		{in: "2026-03-28/2026-03-29", loc: berlin, start: "2026-03-27T23:00:00Z", end: "2026-03-29T22:00:00Z"},
		{in: " 2026-12-24T18:00:00+01:00/2026-12-25 ", loc: time.UTC, start: "2026-12-24T17:00:00Z", end: "2026-12-26T00:00:00Z"},
		{in: "2026-12-24", loc: time.UTC, err: "want START/END"},
		{in: "2026-12-24/tomorrow", loc: time.UTC, err: `end: "tomorrow" is neither`},
		{in: "2026-12-26/2026-12-24", loc: time.UTC, err: "ends before it starts"},
		{in: "2026-12-24T10:00:00Z/2026-12-24T10:00:00Z", loc: time.UTC, err: "ends before it starts"},
	}
	for _, tt := range tests {
		f, err := ParseFreeze(tt.in, tt.loc)
		switch {
		case tt.err != "":
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("ParseFreeze(%q): %v, want an error saying %q", tt.in, err, tt.err)
			}
		case err != nil:
			t.Errorf("ParseFreeze(%q): %v", tt.in, err)
		case f.String() != tt.start+"/"+tt.end:
			t.Errorf("ParseFreeze(%q, %s) = %s, want %s/%s", tt.in, tt.loc, f, tt.start, tt.end)
		}
	}
}

func TestReadFreezes(t *testing.T) {
	calendar := "# holidays\n\n2026-12-24/2026-12-26   # Christmas\n2026-12-31/2027-01-01\n"
	fs, err := ReadFreezes(strings.NewReader(calendar), "holidays.txt", time.UTC)
	if err != nil || len(fs) != 2 || fs[1].String() != "2026-12-31T00:00:00Z/2027-01-02T00:00:00Z" {
		t.Fatalf("ReadFreezes: %v, %v", fs, err)
	}
	if _, err := ReadFreezes(strings.NewReader("2026-12-24/2026-12-26\nsoon/later\n"), "holidays.txt", time.UTC); err == nil || !strings.HasPrefix(err.Error(), "holidays.txt:2: ") {
		t.Errorf("a bad line: %v, want the error to name holidays.txt:2", err)
	}
}

// frozenUntil is the end of the freezes that hold now, one running into
// the next.
func TestFrozenUntil(t *testing.T) {
	at := func(s string) time.Time { t, _ := time.Parse(time.RFC3339, s); return t }
	freezes := []Freeze{
		{at("2026-12-24T00:00:00Z"), at("2026-12-27T00:00:00Z")},
		{at("2026-12-26T12:00:00Z"), at("2026-12-28T00:00:00Z")}, // overlaps the first
		{at("2026-12-28T00:00:00Z"), at("2026-12-29T00:00:00Z")}, // runs on from the second
		{at("2026-12-31T00:00:00Z"), at("2027-01-02T00:00:00Z")},
	}
	for now, want := range map[string]string{
		"2026-12-25T10:00:00Z": "2026-12-29T00:00:00Z",
		"2026-12-28T23:59:59Z": "2026-12-29T00:00:00Z",
		"2026-12-29T00:00:00Z": "",
		"2026-12-23T23:59:59Z": "",
		"2027-01-01T00:00:00Z": "2027-01-02T00:00:00Z",
	} {
		end, frozen := FrozenUntil(freezes, at(now))
		if frozen != (want != "") || frozen && !end.Equal(at(want)) {
			t.Errorf("frozenUntil(%s) = %v, %v; want %q", now, end, frozen, want)
		}
	}
}

// LoadFreezes reads --freeze's ranges and --freeze-file's lines in the
// time zone given, each error naming its flag.
func TestLoadFreezes(t *testing.T) {
	file := t.TempDir() + "/calendar"
	if err := os.WriteFile(file, []byte("# holidays\n2026-12-31/2027-01-01\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := LoadFreezes([]string{"2026-12-24/2026-12-26"}, file, "Europe/Berlin")
	if err != nil || len(got) != 2 || got[0].String() != "2026-12-23T23:00:00Z/2026-12-26T23:00:00Z" || got[1].String() != "2026-12-30T23:00:00Z/2027-01-01T23:00:00Z" {
		t.Errorf("%v, %v", got, err)
	}
	for _, c := range []struct {
		ranges     []string
		file, zone string
		want       string
	}{
		{nil, "", "Local", "--freeze-time-zone"},
		{nil, "", "Mars/Olympus", "--freeze-time-zone"},
		{[]string{"tomorrow"}, "", "UTC", "--freeze"},
		{nil, file + ".missing", "UTC", "--freeze-file"},
	} {
		if _, err := LoadFreezes(c.ranges, c.file, c.zone); err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%v %q %q: %v, want an error about %s", c.ranges, c.file, c.zone, err, c.want)
		}
	}
}
