package policy

import (
	"strings"
	"testing"
)

// TestParseNotifyChannel: a manager's NotifyChannelAnnotation is its
// NotifyChannel, cut at MaxNotifyChannel+1 bytes (a longer value names no
// channel); none is empty.
func TestParseNotifyChannel(t *testing.T) {
	long := strings.Repeat("a", 10<<10)
	cases := []struct{ name, value, want string }{
		{name: "none"},
		{name: "a name", value: "team-a", want: "team-a"},
		{name: "cut", value: long, want: long[:MaxNotifyChannel+1]},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			obj := manager()
			if c.value != "" {
				obj.SetAnnotations(map[string]string{NotifyChannelAnnotation: c.value})
			}
			m, errs := Parse(obj)
			if len(errs) > 0 || m.NotifyChannel != c.want {
				t.Errorf("NotifyChannel %.80q (%v), want %.80q", m.NotifyChannel, errs, c.want)
			}
		})
	}
}
