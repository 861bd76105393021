package policy

import (
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
		errs = append(errs, window.PastDates(p.Windows, field.NewPath("spec", "policies").Index(i).Child("windows"), now)...)
	}
	return errs
}
