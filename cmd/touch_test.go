package cmd

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/nsman/nsman/policy"
)

// nsman touch --dry-run prints, for each namespace (once), the merge patch
// that writes the touched annotation at now, in UTC to the second; a name
// that is no namespace's is a usage error, and nothing is printed for any.
func TestTouchPatch(t *testing.T) {
	now := time.Date(2026, 11, 24, 10, 30, 0, 999, time.FixedZone("CET", 3600))
	o := &touchOptions{dryRun: true, now: func() time.Time { return now }}
	c := newTouchCommand()
	var out bytes.Buffer
	c.SetOut(&out)
	if err := o.run(c, []string{"preview-1", "preview-2", "preview-1"}); err != nil {
		t.Fatal(err)
	}
	patch := `{"metadata":{"annotations":{"` + policy.TouchedAnnotation + `":"2026-11-24T09:30:00Z"}}}`
	want := "namespace preview-1 would be touched at 2026-11-24T09:30:00Z: merge patch " + patch + "\n" +
		"namespace preview-2 would be touched at 2026-11-24T09:30:00Z: merge patch " + patch + "\n"
	if out.String() != want {
		t.Errorf("printed\n%s\nwant\n%s", out.String(), want)
	}
	out.Reset()
	var usage usageError
	if err := o.run(c, []string{"preview-1", "Preview/2"}); !errors.As(err, &usage) || out.Len() > 0 {
		t.Errorf("a bad name: error %v, printed %q; want a usage error and nothing printed", err, out.String())
	}
}
