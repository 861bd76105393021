package decide

import (
	"fmt"
	"strings"
	"time"

	"github.com/nsman/nsman/internal/status"
)

// DefaultMaxHold is how far ahead of now a hold may end; one further is
// ignored, so that nobody keeps a namespace forever with one annotation.
const DefaultMaxHold = 720 * time.Hour

// holdLeeway is how far beyond the maximum a hold may end and still hold:
// nsman hold counts from its own clock, a sweep from the API server's as
// the sweep began.
const holdLeeway = 5 * time.Minute

// Hold is a status.HoldAnnotation as found on an object.
type Hold struct {
	// On names the object: "namespace X" or "manager ns/name".
	On    string
	Value string
}

// Holds is what a pair's or a manager's holds amount to at one time.
type Holds struct {
	// Until is the latest end of the holds in force, zero when none is;
	// By names the object that holds until then.
	Until time.Time
	By    string
	// Ignored says why holds were ignored: unparseable, or ending further
	// ahead than the maximum.
	Ignored string
}

// HoldsAt judges holds at now: a hold that has ended is no hold, one that
// does not parse or ends more than max (and holdLeeway) after now is
// ignored.
func HoldsAt(holds []Hold, now time.Time, max time.Duration) Holds {
	var st Holds
	var ignored []string
	for _, h := range holds {
		if h.Value == "" {
			continue
		}
		until, err := time.Parse(time.RFC3339, h.Value)
		switch {
		case err != nil:
			ignored = append(ignored, fmt.Sprintf("%s on %s is not an RFC 3339 time (%q)", status.HoldAnnotation, h.On, status.Truncate(h.Value, 64)))
		case until.Sub(now) > max+holdLeeway:
			ignored = append(ignored, fmt.Sprintf("%s on %s ends %s, more than --max-hold %s ahead", status.HoldAnnotation, h.On, until.UTC().Format(time.RFC3339), max))
		case until.After(now) && until.After(st.Until):
			st.Until, st.By = until.UTC(), h.On
		}
	}
	st.Ignored = strings.Join(ignored, "; ")
	return st
}
