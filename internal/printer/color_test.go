package printer

import (
	"bytes"
	"regexp"
	"strings"
	"testing"

	"github.com/nsman/nsman/report"
)

// With colour, a table's states are coloured and, once a terminal has
// taken the escapes, it reads as the table without colour: every column
// where it was. Without colour, no escape at all.
func TestTableColorsStates(t *testing.T) {
	r := report.Report{Version: report.ReportVersion, Entries: []report.Entry{
		{Namespace: "a", Name: "a", Target: "a", State: report.StateFailed, Message: "forbidden"},
		{Namespace: "b", Name: "b", Target: "b", State: report.StateWaiting, Message: "TTL not elapsed"},
		{Namespace: "c", Name: "c", Target: "c", State: report.StateTargetTerminating, Message: "stuck", Effects: []string{"an effect"}},
	}}
	escapes := regexp.MustCompile("\x1b\\[[0-9]+m")
	for _, format := range []string{Text, Wide} {
		var plain, colour bytes.Buffer
		if err := Print(&plain, r, Options{Format: format}); err != nil {
			t.Fatal(err)
		}
		if err := Print(&colour, r, Options{Format: format, Color: true}); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(plain.String(), "\x1b") {
			t.Errorf("-o %s without colour:\n%q", format, plain.String())
		}
		if !strings.Contains(colour.String(), "\x1b[31mfailed\x1b[0m") || !strings.Contains(colour.String(), "\x1b[39mwaiting\x1b[0m") {
			t.Errorf("-o %s in colour: states not coloured:\n%q", format, colour.String())
		}
		if shown := escapes.ReplaceAllString(colour.String(), ""); shown != plain.String() {
			t.Errorf("-o %s in colour reads, escapes taken:\n%s\nwant as without:\n%s", format, shown, plain.String())
		}
	}
}
