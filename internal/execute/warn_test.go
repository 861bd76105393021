package execute

import (
	"bytes"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/nsman/nsman/internal/cluster"
	"github.com/nsman/nsman/internal/decide"
	"github.com/nsman/nsman/internal/tell"
	"github.com/nsman/nsman/policy"
	"github.com/nsman/nsman/report"
	"github.com/nsman/nsman/webhook"
)

// A warning is told once its record is written, with the event dueSoon,
// its due time and a key of its own; planned in a dry run, it tells
// nothing; one whose record was not written is not told, nor reported.
func TestWarn(t *testing.T) {
	due := time.Date(2026, 12, 2, 13, 0, 0, 0, time.UTC)
	warning := func() report.Entry {
		return report.Entry{Target: "preview-7", State: report.StateWaiting, Message: "TTL elapses",
			Warning: &report.Warning{Policy: "expire", Action: "DELETE", Due: due, Before: "1h"}}
	}
	m := policy.Manager{Namespace: "nsman", Name: "cleanup", UID: "m-uid"}
	for _, tc := range []struct {
		name     string
		done     report.State
		recorded bool
		want     report.State // "": no warning left on the entry
		sent     int
	}{
		{name: "told", done: report.StateFired, recorded: true, want: report.StateFired, sent: 1},
		{name: "planned in a dry run", done: report.StatePlanned, recorded: true, want: report.StatePlanned},
		{name: "not recorded", done: report.StateFired},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url, got := notifyReceiver(t, 200)
			var log bytes.Buffer
			x := notifyingExecutor(t, url, &log)
			x.Writer.(*fakeWriter).done = tc.done
			e := warnOf(t.Context(), x, m, decide.Target{Name: "preview-7"}, warning(), tc.recorded)
			switch {
			case tc.want == "" && e.Warning != nil:
				t.Fatalf("warning %+v left on an entry not recorded", e.Warning)
			case tc.want != "" && (e.Warning == nil || e.Warning.State != tc.want):
				t.Fatalf("warning %+v, want state %s", e.Warning, tc.want)
			}
			if want := map[report.State]string{report.StateFired: "; warned: ", report.StatePlanned: "; would warn: "}[tc.want]; want != "" && !strings.Contains(e.Message, want+`policy "expire" will DELETE namespace preview-7 at 2026-12-02T13:00:00Z`) {
				t.Errorf("message %q, want it to say %q", e.Message, want)
			}
			sent := got()
			if len(sent) != tc.sent {
				t.Fatalf("%d notifications, want %d", len(sent), tc.sent)
			}
			if tc.sent == 0 {
				return
			}
			n := sent[0]
			if n.Event != tell.EventDueSoon || n.Due == nil || !n.Due.Equal(due) || n.Result != tell.ResultPending || n.Target != "preview-7" || n.key == "" {
				t.Errorf("notification %+v", n)
			}
			// The same warning told again carries the same key.
			warnOf(t.Context(), x, m, decide.Target{Name: "preview-7"}, warning(), true)
			if again := got(); len(again) != 2 || again[1].key != n.key {
				t.Errorf("keys %v, want the same twice", again)
			}
		})
	}
}

// A warning goes to the channel its namespace picks, with the links that
// let its people extend it, bound to the namespace's UID.
func TestWarnOnItsChannelWithLinks(t *testing.T) {
	defaultURL, toDefault := notifyReceiver(t, http.StatusOK)
	teamA, toTeamA := notifyReceiver(t, http.StatusOK)
	var log bytes.Buffer
	x := notifyingExecutor(t, defaultURL, &log)
	x.Notifier = x.Notifier.WithChannels([]tell.Channel{{Name: "team-a", URL: teamA}}, webhook.NewSender(webhook.Options{MaxAttempts: 1, Timeout: 5 * time.Second}))
	x.Links = tell.NewLinker("https://nsman.example.com", []byte("key"))
	x.Writer.(*fakeWriter).done = report.StateFired
	due := time.Date(2026, 12, 2, 13, 0, 0, 0, time.UTC)
	e := report.Entry{Target: "preview-7", State: report.StateWaiting, Warning: &report.Warning{Policy: "expire", Action: "DELETE", Due: due, Before: "1h"}}
	target := decide.Target{Name: "preview-7", Listed: cluster.Namespace{Name: "preview-7", UID: "uid-7", NotifyChannel: "team-a"}}
	warnOf(t.Context(), x, policy.Manager{Namespace: "nsman", Name: "cleanup"}, target, e, true)
	sent := toTeamA()
	if len(sent) != 1 || len(toDefault()) != 0 {
		t.Fatalf("%d warnings on team-a, want 1 there and none on the default", len(sent))
	}
	if len(sent[0].Links) != 3 || !strings.Contains(sent[0].Links[0].URL, "https://nsman.example.com/link?t=") {
		t.Errorf("links %+v, want the three, to nsman serve", sent[0].Links)
	}
}
