package execute

import (
	"bytes"
	"net/http"
	"testing"

	"github.com/nsman/nsman/internal/tell"
	"github.com/nsman/nsman/policy"
)

// A SLEEP's notification carries the links to extend or wake the
// namespace, bound to its UID; its wake's does not, nor any other action's,
// nor any without --links-url.
func TestNotifyLinks(t *testing.T) {
	for _, tt := range []struct {
		name   string
		action string
		wake   bool
		linker bool
		want   int
	}{
		{name: "a sleep", action: policy.ActionSleep, linker: true, want: 3},
		{name: "a wake", action: policy.ActionSleep, wake: true, linker: true},
		{name: "a delete", action: policy.ActionDelete, linker: true},
		{name: "a sleep without links", action: policy.ActionSleep},
	} {
		t.Run(tt.name, func(t *testing.T) {
			url, got := notifyReceiver(t, http.StatusOK)
			var log bytes.Buffer
			x := notifyingExecutor(t, url, &log)
			if tt.linker {
				x.Links = tell.NewLinker("https://nsman.example.com", []byte("key"))
			}
			d := decision(rule)
			d.Plan.Policy.Action.Type, d.Plan.Wake, d.Plan.Target.UID = tt.action, tt.wake, "uid-1"
			x.Notify(t.Context(), d.Manager, d.Plan, nil, nil, nil, false)
			n := got()
			if len(n) != 1 {
				t.Fatalf("sent %d notifications, want 1", len(n))
			}
			if len(n[0].Links) != tt.want {
				t.Fatalf("links %+v, want %d", n[0].Links, tt.want)
			}
			for _, l := range n[0].Links {
				if l.URL == "" || l.Expires.IsZero() || bytes.Contains([]byte(l.URL), []byte("key")) {
					t.Errorf("link %+v: want a URL without the key, and an expiry", l)
				}
			}
		})
	}
}
