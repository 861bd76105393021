package tell

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nsman/nsman/webhook"
)

// TestRoute: the namespace's channel beats the manager's, which beats the
// default; a name no channel has goes to the default with a warning; a
// tenant that writes a URL in place of a name gets the default, never its
// URL; without a default, only a channel picked sends.
func TestRoute(t *testing.T) {
	sender := webhook.NewSender(webhook.Options{})
	channels := []Channel{{Name: "team-a", URL: "https://hooks.example/a"}, {Name: "team-b", URL: "https://hooks.example/b", Format: NotifySlack}}
	withDefault := NewNotifier("https://hooks.example/default", DefaultFormat, sender).WithChannels(channels, sender)
	noDefault := NewNotifier("", DefaultFormat, sender).WithChannels(channels, sender)
	cases := []struct {
		name              string
		n                 *Notifier
		namespace, manger string
		wantURL           string // "": nothing sent
		wantWarning       string
	}{
		{name: "neither: the default", n: withDefault, wantURL: "https://hooks.example/default"},
		{name: "the manager's", n: withDefault, manger: "team-b", wantURL: "https://hooks.example/b"},
		{name: "the namespace's beats the manager's", n: withDefault, namespace: "team-a", manger: "team-b", wantURL: "https://hooks.example/a"},
		{name: "unknown: the default, warned", n: withDefault, namespace: "team-z", wantURL: "https://hooks.example/default", wantWarning: `notify channel "team-z" is not one of the platform's (--notify-channel): notified on the default channel`},
		{name: "an unknown namespace's does not fall to the manager's", n: withDefault, namespace: "team-z", manger: "team-a", wantURL: "https://hooks.example/default", wantWarning: `"team-z"`},
		{name: "a tenant's URL is no channel", n: withDefault, namespace: "https://evil.example/hook", wantURL: "https://hooks.example/default", wantWarning: "notified on the default channel"},
		{name: "no default: a channel picked sends", n: noDefault, namespace: "team-a", wantURL: "https://hooks.example/a"},
		{name: "no default, none picked: nothing", n: noDefault},
		{name: "no default, unknown: nothing, warned", n: noDefault, manger: "team-z", wantWarning: "not notified: there is no default channel"},
		{name: "no notifier", n: nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			to, warning := c.n.Route(c.namespace, c.manger)
			switch {
			case c.wantURL == "" && to != nil:
				t.Errorf("routed to %s, want nothing sent", RedactURL(to.url))
			case c.wantURL != "" && (to == nil || to.url != c.wantURL):
				t.Errorf("routed to %v, want %s", to, c.wantURL)
			}
			if c.wantWarning == "" && warning != "" || !strings.Contains(warning, c.wantWarning) {
				t.Errorf("warning %q, want %q", warning, c.wantWarning)
			}
			if warning != "" && !strings.HasPrefix(warning, ChannelUnknownPrefix) {
				t.Errorf("warning %q does not begin with ChannelUnknownPrefix", warning)
			}
		})
	}
	if to, _ := withDefault.Route("team-b", ""); to.format.Name() != NotifySlack {
		t.Errorf("team-b's format %s, want its own, %s", to.format.Name(), NotifySlack)
	}
	if to, _ := withDefault.Route("team-a", ""); to.format.Name() != DefaultFormat {
		t.Errorf("team-a's format %s, want the default's, %s", to.format.Name(), DefaultFormat)
	}
}

// TestChannelSends: a notification routed to a channel reaches its
// receiver, in the channel's format, and not the default's.
func TestChannelSends(t *testing.T) {
	var mu sync.Mutex
	got := map[string]string{}
	receiver := func(name string) string {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			mu.Lock()
			got[name] = string(body)
			mu.Unlock()
		}))
		t.Cleanup(srv.Close)
		return srv.URL + "/hook/secret"
	}
	sender := webhook.NewSender(webhook.Options{MaxAttempts: 1, Timeout: 5 * time.Second})
	n := NewNotifier(receiver("default"), DefaultFormat, sender).WithChannels([]Channel{{Name: "team-a", URL: receiver("team-a"), Format: NotifySlack}}, sender)
	to, _ := n.Route("team-a", "")
	if err := to.Send(t.Context(), Notification{Target: "preview-1", Action: "DELETE", Result: "succeeded"}, "key"); err != nil {
		t.Fatal(err)
	}
	var slack map[string]string
	if err := json.Unmarshal([]byte(got["team-a"]), &slack); err != nil || !strings.Contains(slack["text"], "preview-1") {
		t.Errorf("team-a received %q (%v), want a Slack text about preview-1", got["team-a"], err)
	}
	if _, ok := got["default"]; ok {
		t.Errorf("the default received %q, want nothing", got["default"])
	}
}

// TestParseChannels: --notify-channel NAME=FILE and
// --notify-channel-format NAME=FORMAT, and what they refuse, with no error
// showing what a file holds.
func TestParseChannels(t *testing.T) {
	dir := t.TempDir()
	file := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := file("good", "  https://hooks.example/services/T0/B0/secret\n")
	notURL := file("not-url", "ftp://hooks.example/services/secret")
	twoLines := file("two-lines", "https://hooks.example/a/secret\nhttps://hooks.example/b/secret")
	big := file("big", "https://hooks.example/"+strings.Repeat("secret", maxURLFile))
	empty := file("empty", " \n")
	cases := []struct {
		name             string
		channels, format []string
		want             []Channel
		wantErr          string
	}{
		{name: "none"},
		{name: "one, with a format", channels: []string{"team-a=" + good}, format: []string{"team-a=slack"},
			want: []Channel{{Name: "team-a", URL: "https://hooks.example/services/T0/B0/secret", Format: "slack"}}},
		{name: "no =", channels: []string{"team-a"}, wantErr: "want NAME=VALUE"},
		{name: "not a DNS label", channels: []string{"Team_A=" + good}, wantErr: "must be a DNS label"},
		{name: "twice", channels: []string{"a=" + good, "a=" + good}, wantErr: "given twice"},
		{name: "no file", channels: []string{"a=" + filepath.Join(dir, "missing")}, wantErr: "no such file"},
		{name: "empty file", channels: []string{"a=" + empty}, wantErr: "is empty"},
		{name: "not http", channels: []string{"a=" + notURL}, wantErr: "want an absolute http or https URL on one line"},
		{name: "two lines", channels: []string{"a=" + twoLines}, wantErr: "on one line"},
		{name: "too big", channels: []string{"a=" + big}, wantErr: "holds more than"},
		{name: "format of no channel", channels: []string{"a=" + good}, format: []string{"b=slack"}, wantErr: "no --notify-channel b=FILE"},
		{name: "unknown format", channels: []string{"a=" + good}, format: []string{"a=carrier-pigeon"}, wantErr: "--notify-channel-format a"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := ParseChannels(c.channels, c.format)
			if c.wantErr == "" {
				if err != nil || len(got) != len(c.want) || len(got) > 0 && got[0] != c.want[0] {
					t.Fatalf("ParseChannels = %v, %v; want %v", got, err, c.want)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Fatalf("error %v, want one with %q", err, c.wantErr)
			}
			if strings.Contains(err.Error(), "secret") {
				t.Errorf("error %q shows what the file holds", err)
			}
		})
	}
}

// TestValidateChannelsRedacts: a channel's URL that does not do is shown
// as RedactURL shows it.
func TestValidateChannelsRedacts(t *testing.T) {
	err := ValidateChannels([]Channel{{Name: "a", URL: "ftp://hooks.example/secret"}})
	if err == nil || strings.Contains(err.Error(), "secret") || !strings.Contains(err.Error(), "ftp://hooks.example/…") {
		t.Fatalf("error %v, want the URL redacted", err)
	}
}
