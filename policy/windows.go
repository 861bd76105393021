package policy

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/nsman/nsman/policy/window"
)

// PastWindows reports, at now, each window of m's policies whose dates are
// all past: it never opens again, and a policy whose windows are all so
// never acts. nsman validate refuses such a window; Parse, which a sweep
// uses, cannot (a manager that was valid must not turn invalid overnight,
// its other windows and policies stopping with it): a sweep says instead
// that the policy's windows open no more.
func PastWindows(m Manager, now time.Time) field.ErrorList {
	var errs field.ErrorList
	for i, p := range m.Policies {
		for j, w := range p.Windows {
			if window.Past(w, now) {
				last := w.Dates[len(w.Dates)-1].Last
				path := field.NewPath("spec", "policies").Index(i).Child("windows").Index(j).Child("dates")
				errs = append(errs, field.Invalid(path, last.String(), fmt.Sprintf("every date is past at %s: the window never opens again", stamp(now))))
			}
		}
	}
	return errs
}

// noMoreOpen is a policy's detail when none of its windows opens again:
// their dates are past.
func noMoreOpen(p Policy) string {
	return fmt.Sprintf("outside its windows (%s), which open no more: their dates are past", window.Describe(p.Windows))
}
