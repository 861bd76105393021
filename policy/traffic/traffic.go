package traffic

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nsman/nsman/policy/durtext"
)

// Source is where an IDLE condition reads its target's traffic: Preset
// names one of the Presets, or Query is PromQL of the platform's own; never
// both.
type Source struct {
	Preset string
	Query  string
}

// MaxQuery bounds the length of a query of the platform's own, as the CRD
// does.
const MaxQuery = 4096

// Window is the placeholder a query writes for its range: the condition's
// idleSeconds, as "<seconds>s".
const Window = "$window"

// Preset is a traffic source nsman knows: one counter of requests, as the
// project that exports it names and labels it.
type Preset struct {
	// Name is how a condition names it (traffic.preset).
	Name string
	// Metric is the counter it reads.
	Metric string
	// Match are the matchers that pin where the series must have been
	// scraped from, unless the platform says others (--traffic-match): a
	// tenant whose pod exports a counter of this name cannot make another
	// namespace look used. "" when the label that names the namespace is
	// the scrape's own.
	Match string
	// Filter are matchers that are part of what the counter means (Istio's
	// reporter), kept whatever Match is.
	Filter string
	// By is the label of the answer that names where the requests went.
	By string
	// query is the PromQL over the series selected (sel) in the window.
	query func(sel, window string) string
	// namespaces are the namespaces a value of By names, of those that
	// exist; nil: the value is the namespace's name.
	namespaces func(value string, exists func(string) bool) []string
}

// presets are the registered presets, in the order docs and the CRD list
// them.
var presets = []Preset{ingressNginx, istio, traefik}

// Presets returns the registered presets, in order.
func Presets() []Preset { return slices.Clone(presets) }

// Names are the registered presets' names, in order.
func Names() []string {
	names := make([]string, 0, len(presets))
	for _, p := range presets {
		names = append(names, p.Name)
	}
	return names
}

// Lookup returns the preset called name, false for none.
func Lookup(name string) (Preset, bool) {
	i := slices.IndexFunc(presets, func(p Preset) bool { return p.Name == name })
	if i < 0 {
		return Preset{}, false
	}
	return presets[i], true
}

// Selector is the series selector of p's counter with the matchers match
// (p.Match when match is ""), and p.Filter.
func (p Preset) Selector(match string) string {
	matchers := slices.DeleteFunc([]string{p.Filter, match}, func(s string) bool { return s == "" })
	if match == "" && p.Match != "" {
		matchers = append(matchers, p.Match)
	}
	return p.Metric + "{" + strings.Join(matchers, ",") + "}"
}

// PromQL is p's query with the matchers match (p.Match when ""), over
// window.
func (p Preset) PromQL(match string, window time.Duration) string {
	return p.query(p.Selector(match), Range(window))
}

// Namespaces are the namespaces a value of p.By names, of those that exist.
func (p Preset) Namespaces(value string, exists func(string) bool) []string {
	if p.namespaces == nil {
		if value == "" {
			return nil
		}
		return []string{value}
	}
	return p.namespaces(value, exists)
}

// Range is window as a PromQL range: whole seconds, at least one.
func Range(window time.Duration) string {
	return strconv.FormatInt(max(int64(window/time.Second), 1), 10) + "s"
}

// requests is the PromQL of the requests counted by the series sel in
// window, by series: the increase of those that were there before the
// window, and the count of those that appeared within it (increase starts
// from a series' first sample, so it never sees the request that made one).
func requests(sel, window string) string {
	return fmt.Sprintf("(%[1]s unless %[1]s offset %[2]s) or increase(%[1]s[%[2]s])", sel, window)
}

// Answer is what a traffic source answered of a namespace's requests in
// a window.
type Answer struct {
	// Source says where they were read ("preset ingress-nginx").
	Source string
	Window time.Duration
	// Requests counts them; it means something only when Unknown is "".
	Requests float64
	// Unknown says why the source gave no answer (it is down, timed out,
	// refused the query, answered too much): never idleness.
	Unknown string
	// Note says what else the answer said of them: other namespaces whose
	// requests they may have been.
	Note string
}

// Activity says that a counted requests, as IDLE's activity: not how many,
// which change at each sweep (the entry's traffic says).
func (a Answer) Activity() string {
	s := fmt.Sprintf("requests within %s (traffic: %s)", durtext.Format(a.Window), a.Source)
	if a.Note != "" {
		s += "; " + a.Note
	}
	return s
}

// NoneSeen says, as IDLE's reason does, that a (when read) counted no
// request; "" for nil.
func NoneSeen(a *Answer) string {
	if a == nil {
		return ""
	}
	return fmt.Sprintf("; no requests in the last %s (traffic: %s)", durtext.Format(a.Window), a.Source)
}

// Read reads a source from its object in a manifest, and says what is
// wrong with it ("" for nothing): a key it does not know, or Check's.
func Read(obj map[string]any) (Source, string) {
	var s Source
	for k, v := range obj {
		text, ok := v.(string)
		switch {
		case k != "preset" && k != "query":
			return Source{}, fmt.Sprintf("unknown key %q: a source has a preset or a query", k)
		case !ok:
			return Source{}, k + " must be a string"
		case k == "preset":
			s.Preset = text
		default:
			s.Query = text
		}
	}
	return s, s.Check()
}

// Describe says s as a report says it: "preset ingress-nginx", "a query".
func (s Source) Describe() string {
	if s.Preset != "" {
		return "preset " + s.Preset
	}
	return "a query"
}

// Check says what is wrong with s, "" for nothing: exactly one of a known
// preset and a query, the query within MaxQuery and naming Window.
func (s Source) Check() string {
	switch {
	case s.Preset != "" && s.Query != "":
		return "give a preset or a query, not both"
	case s.Preset == "" && s.Query == "":
		return "give a preset (" + strings.Join(Names(), ", ") + ") or a query"
	case s.Preset != "":
		if _, ok := Lookup(s.Preset); !ok {
			return fmt.Sprintf("unknown preset %q: one of %s", s.Preset, strings.Join(Names(), ", "))
		}
	case len(s.Query) > MaxQuery:
		return fmt.Sprintf("a query may be at most %d bytes", MaxQuery)
	case !strings.Contains(s.Query, Window):
		return "a query must read its range as " + Window + " (the condition's idleSeconds)"
	}
	return ""
}

// Table is the presets as docs/sleep.md lists them: each one's counter,
// the matchers that pin it by default, and the query it runs over a window
// of an hour.
func Table() string {
	var b strings.Builder
	b.WriteString("| preset | counter | pinned by default to | the query over idleSeconds 3600 |\n| --- | --- | --- | --- |\n")
	for _, p := range presets {
		pin := "`" + p.Match + "`"
		if p.Match == "" {
			pin = "nothing: the `namespace` label is the one the scrape gives the reporting pod"
		}
		fmt.Fprintf(&b, "| `%s` | `%s` | %s | `%s` |\n", p.Name, p.Metric, pin, strings.ReplaceAll(p.PromQL("", time.Hour), "|", `\|`))
	}
	return b.String()
}
