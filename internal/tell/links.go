package tell

import (
	"strconv"
	"strings"
	"time"

	"github.com/nsman/nsman/links"
)

// Link is a signed link a notification carries (see package links): what
// it does, for how long, where, and until when it may be used. Its URL is
// nsman's own (--links-url), never a tenant's, so the chat formats show it
// as a link.
type Link struct {
	// Action is "extend" (a hold, as nsman hold --for) or "wake" (as
	// nsman wake --for).
	Action string `json:"action"`
	// Duration is how long, as a Go duration ("24h", "168h", "2h").
	Duration string    `json:"duration"`
	URL      string    `json:"url"`
	Expires  time.Time `json:"expires"`
}

// Linker makes the links of a notification about a namespace: the same for
// a SLEEP's notification and a warning before an action. A nil Linker
// makes none.
type Linker struct {
	base string
	key  []byte
}

// NewLinker makes links to base (--links-url) signed with key; nil when
// either is missing.
func NewLinker(base string, key []byte) *Linker {
	if base == "" || len(key) == 0 {
		return nil
	}
	return &Linker{base: base, key: key}
}

// LinkerFromFlags is the Linker of nsman sweep's --links-url and
// --links-signing-key-file (both, or neither: nil).
func LinkerFromFlags(base, keyFile string) (*Linker, error) {
	base, key, err := links.FromFlags(base, keyFile)
	return NewLinker(base, key), err
}

// For returns the links about namespace (of uid) made at now, none without
// a Linker or a UID to bind them to.
func (l *Linker) For(namespace, uid string, now time.Time) []Link {
	if l == nil || uid == "" {
		return nil
	}
	var out []Link
	for _, o := range links.Offers(l.base, l.key, namespace, uid, now) {
		out = append(out, Link{Action: string(o.Link.Action), Duration: shortDuration(o.Link.Duration), URL: o.URL, Expires: o.Link.Expires})
	}
	return out
}

// shortDuration is d as a Go duration without its zero minutes and
// seconds: "24h", not "24h0m0s".
func shortDuration(d time.Duration) string {
	s := d.String()
	s = strings.TrimSuffix(s, "0s")
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// linkLabel is what a chat format shows for l: "extend by 1 day", "wake
// for 2 hours".
func linkLabel(l Link) string {
	d, err := time.ParseDuration(l.Duration)
	if err != nil {
		return l.Action
	}
	var amount string
	switch {
	case d%(7*24*time.Hour) == 0:
		amount = plural(int(d/(7*24*time.Hour)), "week")
	case d%(24*time.Hour) == 0:
		amount = plural(int(d/(24*time.Hour)), "day")
	case d%time.Hour == 0:
		amount = plural(int(d/time.Hour), "hour")
	default:
		amount = l.Duration
	}
	if l.Action == string(links.Wake) {
		return "wake for " + amount
	}
	return l.Action + " by " + amount
}

func plural(n int, unit string) string {
	if n == 1 {
		return "1 " + unit
	}
	return strconv.Itoa(n) + " " + unit + "s"
}
