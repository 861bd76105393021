package tell

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/nsman/nsman/links"
)

func TestLinkerFor(t *testing.T) {
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	if got := NewLinker("", []byte("k")).For("preview-1", "uid-1", now); got != nil {
		t.Errorf("without --links-url: %v, want no links", got)
	}
	if got := NewLinker("https://nsman.example.com", nil).For("preview-1", "uid-1", now); got != nil {
		t.Errorf("without a key: %v, want no links", got)
	}
	if got := NewLinker("https://nsman.example.com", []byte("k")).For("preview-1", "", now); got != nil {
		t.Errorf("without a UID: %v, want no links", got)
	}
	got := NewLinker("https://nsman.example.com", []byte("k")).For("preview-1", "uid-1", now)
	want := []struct{ action, duration, label string }{{"extend", "24h", "extend by 1 day"}, {"extend", "168h", "extend by 1 week"}, {"wake", "2h", "wake for 2 hours"}}
	if len(got) != len(want) {
		t.Fatalf("%d links, want %d", len(got), len(want))
	}
	for i, l := range got {
		if l.Action != want[i].action || l.Duration != want[i].duration || linkLabel(l) != want[i].label || !l.Expires.Equal(now.Add(links.DefaultValidity)) {
			t.Errorf("link %d = %+v (%q), want %+v", i, l, linkLabel(l), want[i])
		}
		token, _ := strings.CutPrefix(l.URL, "https://nsman.example.com/link?t=")
		if _, err := links.Verify([]byte("k"), token, now); err != nil {
			t.Errorf("link %d does not verify: %v", i, err)
		}
	}
}

// Every format carries a notification's links: json as a list, the chat
// formats as links their readers can click.
func TestFormatsCarryLinks(t *testing.T) {
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	n := Notification{Manager: NotificationManager{Namespace: "team-a", Name: "preview"}, Target: "preview-1", Policy: "night", Action: "SLEEP", Result: "succeeded", Time: now,
		Links: NewLinker("https://nsman.example.com", []byte("k")).For("preview-1", "uid-1", now)}
	for _, tc := range []struct {
		format string
		want   func(Link) string
	}{
		{NotifyJSON, func(l Link) string { return `"url":"` + l.URL + `"` }},
		{NotifySlack, func(l Link) string { return "<" + l.URL + "|" + linkLabel(l) + ">" }},
		{NotifyGoogleChat, func(l Link) string { return "<" + l.URL + "|" + linkLabel(l) + ">" }},
		{NotifyTeams, func(l Link) string {
			return `{"type":"Action.OpenUrl","title":"` + linkLabel(l) + `","url":"` + l.URL + `"}`
		}},
	} {
		t.Run(tc.format, func(t *testing.T) {
			f, err := LookupFormat(tc.format)
			if err != nil {
				t.Fatal(err)
			}
			body, err := f.Body(n)
			if err != nil {
				t.Fatal(err)
			}
			// encoding/json's escapes of <, > and &, which a receiver
			// decodes, read as what they stand for.
			text := strings.NewReplacer(`\u003c`, "<", `\u003e`, ">", `\u0026`, "&").Replace(string(body))
			for _, l := range n.Links {
				if !strings.Contains(text, tc.want(l)) {
					t.Errorf("body lacks %s:\n%s", tc.want(l), body)
				}
			}
		})
	}
	body, _ := jsonFormat{}.Body(n)
	var got struct{ Links []Link }
	if err := json.Unmarshal(body, &got); err != nil || len(got.Links) != 3 || got.Links[0].Action != "extend" || got.Links[0].Duration != "24h" || got.Links[0].Expires.IsZero() {
		t.Errorf("json links = %+v, %v", got.Links, err)
	}
}
