package policy

import "testing"

// TestParseNotifyChannel: a manager's annotation Group/notify-channel
// (status.NotifyChannelAnnotation) is its NotifyChannel; none is empty.
func TestParseNotifyChannel(t *testing.T) {
	for _, value := range []string{"", "team-a"} {
		obj := manager()
		if value != "" {
			obj.SetAnnotations(map[string]string{"nsman.k8s.consol.de/notify-channel": value})
		}
		if m, errs := Parse(obj); len(errs) > 0 || m.NotifyChannel != value {
			t.Errorf("NotifyChannel %q (%v), want %q", m.NotifyChannel, errs, value)
		}
	}
}
