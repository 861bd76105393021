package execute

import (
	"bytes"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/nsman/nsman/internal/decide"
	"github.com/nsman/nsman/internal/tell"
	"github.com/nsman/nsman/webhook"
)

// An action's notification goes to the channel its target namespace
// names, else its manager's, else the default; a name that is no channel
// of the platform's goes to the default, with a line in the entry's
// warnings, which an action told on its picked channel lacks.
func TestActNotifiesOnItsChannel(t *testing.T) {
	for _, tt := range []struct {
		name, namespace, manager string
		want                     string // the receiver told
		warned                   bool
	}{
		{name: "no channel", want: "default"},
		{name: "the manager's", manager: "team-a", want: "team-a"},
		{name: "the namespace's over the manager's", namespace: "team-a", manager: "team-z", want: "team-a"},
		{name: "unknown", namespace: "team-z", want: "default", warned: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			defaultURL, toDefault := notifyReceiver(t, http.StatusOK)
			teamA, toTeamA := notifyReceiver(t, http.StatusOK)
			var log bytes.Buffer
			x := notifyingExecutor(t, defaultURL, &log)
			x.Notifier = x.Notifier.WithChannels([]tell.Channel{{Name: "team-a", URL: teamA}}, webhook.NewSender(webhook.Options{MaxAttempts: 1, Timeout: 5 * time.Second}))
			d := decision(func(d *decide.Decision) {
				d.Plan.Target.Listed.NotifyChannel, d.Manager.NotifyChannel = tt.namespace, tt.manager
			})
			e, acted, _ := x.act(t.Context(), &fakeRecord{}, d)
			if !acted {
				t.Fatal("not acted")
			}
			told := map[string]int{"default": len(toDefault()), "team-a": len(toTeamA())}
			if told[tt.want] != 1 || told["default"]+told["team-a"] != 1 {
				t.Errorf("told %v, want once on %s", told, tt.want)
			}
			warned := len(e.Warnings) == 1 && strings.HasPrefix(e.Warnings[0], tell.ChannelUnknownPrefix) && strings.Contains(e.Warnings[0], `"team-z"`)
			if warned != tt.warned || !tt.warned && len(e.Warnings) > 0 {
				t.Errorf("warnings %q, want the unknown channel's: %t", e.Warnings, tt.warned)
			}
		})
	}
}
