package status

import (
	"github.com/nsman/nsman/report"
)

// Prior is what a subject's record said before this sweep: the Events tell
// what changed since.
type Prior struct {
	State report.State
	Last  *LastAction
	// Failed: the latest action had failed (or the rule's status lists a
	// failure on the namespace).
	Failed                         bool
	IgnoredHold, IgnoredAnnotation string
	TrafficUnknown                 string
	// Stuck is the cause of the stuck target recorded (report.Stuck.Cause).
	Stuck string
}
