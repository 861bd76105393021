package tell

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nsman/nsman/policy"
	"github.com/nsman/nsman/report"
)

// TestFormatsRegistry: each registered format has a name of its own and a
// help, which --notify-format's help lists in order; LookupFormat finds
// each and refuses any other name, listing them all.
func TestFormatsRegistry(t *testing.T) {
	names := FormatNames()
	if len(names) == 0 || names[0] != DefaultFormat {
		t.Fatalf("formats %v, want the default %q first", names, DefaultFormat)
	}
	help, last := FormatHelp(), 0
	for i, f := range formats {
		if slices.Index(names, f.Name()) != i {
			t.Errorf("format %q registered twice", f.Name())
		}
		if f.Help() == "" {
			t.Errorf("format %q has no help", f.Name())
		}
		at := strings.Index(help, f.Name()+" ("+f.Help()+")")
		if at < last {
			t.Errorf("help %q lists %q out of order, or not at all", help, f.Name())
		}
		last = at
		if got, err := LookupFormat(f.Name()); err != nil || got.Name() != f.Name() {
			t.Errorf("LookupFormat(%q) = %v, %v", f.Name(), got, err)
		}
	}
	_, err := LookupFormat("xml")
	if err == nil || !strings.Contains(err.Error(), strings.Join(names, ", ")) || !strings.Contains(err.Error(), `"xml"`) {
		t.Errorf("LookupFormat(xml): %v, want an error naming xml and listing %v", err, names)
	}
}

// A notifier or body given no format, or one no format has, sends json,
// as before formats were registered.
func TestNoFormatIsJSON(t *testing.T) {
	n := Notification{Manager: NotificationManager{Namespace: "ops", Name: "m"}, Target: "t", Policy: "p", Action: policy.ActionDelete,
		Result: report.ResultSucceeded, Time: time.Date(2026, 12, 3, 14, 0, 0, 0, time.UTC)}
	want, err := json.Marshal(n)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"", "xml"} {
		got, err := notificationBody(n, name)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("format %q: %s, %v; want %s", name, got, err, want)
		}
		if f := NewNotifier("http://example.com", name, nil).format; f.Name() != DefaultFormat {
			t.Errorf("notifier of format %q sends %s", name, f.Name())
		}
	}
}
