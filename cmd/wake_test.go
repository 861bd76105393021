package cmd

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nsman/nsman/internal/status"
)

// nsman wake --dry-run prints the merge patch that writes the wake
// annotation (not the hold's) at now + --for or --until, on the namespace
// or with --manager on that manager, or removes it with --release; it
// refuses anything but exactly one of them, a time past, or one further
// ahead than --max-hold (which a sweep would ignore), and prints nothing
// then.
func TestWakePatch(t *testing.T) {
	now := time.Date(2026, 11, 23, 22, 0, 0, 500, time.UTC)
	key := `"` + status.WakeAnnotation + `"`
	tests := []struct {
		name string
		set  func(*untilOptions)
		want string
	}{
		{name: "for", set: func(o *untilOptions) { o.forD = 2 * time.Hour },
			want: `namespace dev-alice would be woken until 2026-11-24T00:00:00Z: merge patch {"metadata":{"annotations":{` + key + `:"2026-11-24T00:00:00Z"}}}`},
		{name: "until", set: func(o *untilOptions) { o.untilTime = "2026-11-24T08:00:00+01:00" },
			want: `namespace dev-alice would be woken until 2026-11-24T07:00:00Z: merge patch {"metadata":{"annotations":{` + key + `:"2026-11-24T07:00:00Z"}}}`},
		{name: "manager", set: func(o *untilOptions) { o.forD, o.manager = 8*time.Hour, "sleeper" },
			want: `manager dev-alice/sleeper would be woken until 2026-11-24T06:00:00Z: merge patch {"metadata":{"annotations":{` + key + `:"2026-11-24T06:00:00Z"}}}`},
		{name: "release", set: func(o *untilOptions) { o.release = true },
			want: `namespace dev-alice would be released from its wake: merge patch {"metadata":{"annotations":{` + key + `:null}}}`},
		{name: "max-hold 0 is the default", set: func(o *untilOptions) { o.forD, o.maxHold = 720*time.Hour, 0 },
			want: `namespace dev-alice would be woken until 2026-12-23T22:00:00Z: merge patch {"metadata":{"annotations":{` + key + `:"2026-12-23T22:00:00Z"}}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, c := newWakeOptions(), newWakeCommand()
			o.now, o.dryRun = func() time.Time { return now }, true
			tt.set(o)
			var out bytes.Buffer
			c.SetOut(&out)
			if err := o.run(c, "dev-alice"); err != nil {
				t.Fatal(err)
			}
			if got := strings.TrimSuffix(out.String(), "\n"); got != tt.want {
				t.Errorf("printed\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
	refused := []struct {
		name string
		set  func(*untilOptions)
		want string
	}{
		{"none", func(*untilOptions) {}, "give exactly one of --for, --until and --release"},
		{"two", func(o *untilOptions) { o.forD, o.release = time.Hour, true }, "give exactly one of"},
		{"bad until", func(o *untilOptions) { o.untilTime = "tonight" }, "--until: "},
		{"negative for", func(o *untilOptions) { o.forD = -time.Hour }, "--for must be positive"},
		{"past until", func(o *untilOptions) { o.untilTime = "2026-11-23T21:00:00Z" }, "is not in the future"},
		{"beyond max", func(o *untilOptions) { o.forD = 721 * time.Hour },
			"a wake until 2026-12-23T23:00:00Z is more than --max-hold 30d ahead, which a sweep ignores"},
		{"beyond a smaller max", func(o *untilOptions) { o.forD, o.maxHold = 3*time.Hour, 2*time.Hour }, "more than --max-hold 2h ahead"},
	}
	for _, tt := range refused {
		t.Run(tt.name, func(t *testing.T) {
			o, c := newWakeOptions(), newWakeCommand()
			o.now, o.dryRun = func() time.Time { return now }, true
			tt.set(o)
			var out bytes.Buffer
			c.SetOut(&out)
			var usage usageError
			if err := o.run(c, "dev-alice"); !errors.As(err, &usage) || !strings.Contains(err.Error(), tt.want) || out.Len() > 0 {
				t.Errorf("error %v, printed %q; want a usage error saying %q and nothing printed", err, out.String(), tt.want)
			}
		})
	}
}
