// Package usage is what a sweep reads of the namespaces' use from outside
// the cluster's API: the requests IDLE's traffic counts, one Prometheus
// query per source and window per sweep, kept by namespace.
package usage

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/common/model"

	"github.com/nsman/nsman/internal/cluster"
	"github.com/nsman/nsman/internal/status"
	"github.com/nsman/nsman/policy"
	"github.com/nsman/nsman/policy/traffic"
)

// Querier runs an instant PromQL query, its answer bounded (see package
// prom).
type Querier interface {
	Query(ctx context.Context, q string) (model.Vector, error)
}

// TrafficConfig is where a sweep's traffic queries go, and how presets
// are pinned.
type TrafficConfig struct {
	// Querier is the sweep's Prometheus; nil when there is none
	// (--prometheus-url unset): every answer is unknown.
	Querier Querier
	// Match are the matchers that pin each preset's series, by preset
	// (--traffic-match); a preset absent takes its own.
	Match map[string]string
}

// Traffic is the sweep's traffic reader, which answers decide.Traffic: a
// namespace's requests in a window, from the source an IDLE condition
// names. Each distinct query (a source in a window) runs once per sweep,
// at its first need, whatever the namespaces that ask; the answer is kept
// by namespace. It is safe for concurrent use.
type Traffic struct {
	TrafficConfig
	// namespaces are the sweep's, for a preset whose series name their
	// namespace only in part (Traefik's).
	namespaces func(ctx context.Context) (map[string]cluster.Namespace, error)

	mu      sync.Mutex
	answers map[string]*answer
	// asked are the answers by what a condition names, so that its query
	// is built once a sweep, not once per namespace that asks.
	asked map[asked]sourced
	// ahead are the queries asked ahead of their first need (see Ahead),
	// until Settle; cancelAhead ends those no namespace asked for.
	ahead       sync.WaitGroup
	aheadCtx    context.Context
	cancelAhead context.CancelFunc
}

// sourced is an answer, and where a condition said it reads it
// (traffic.Source.Describe).
type sourced struct {
	*answer
	source string
}

// asked is what an IDLE condition reads its traffic from: a source, in a
// window.
type asked struct {
	src    traffic.Source
	window time.Duration
}

// NewTraffic returns a sweep's traffic reader, the sweep's namespaces
// listed by namespaces.
func NewTraffic(cfg TrafficConfig, namespaces func(ctx context.Context) (map[string]cluster.Namespace, error)) *Traffic {
	return &Traffic{TrafficConfig: cfg, namespaces: namespaces}
}

// exists reports whether namespace name exists, as the sweep listed them.
func (t *Traffic) exists(ctx context.Context, name string) bool {
	all, err := t.namespaces(ctx)
	_, ok := all[name]
	return err == nil && ok
}

// answer is one query's, by namespace.
type answer struct {
	// q is the query, of preset (nil for a query of the platform's own).
	q        string
	preset   *traffic.Preset
	once     sync.Once
	requests map[string]float64
	// notes say, by namespace, other namespaces whose requests those may
	// have been.
	notes   map[string]string
	unknown string
	// needed: a namespace asked for it (In), under Traffic.mu; an answer
	// asked ahead (Ahead) that none needed is not counted.
	needed bool
}

// In is namespace's requests in the window of IDLE condition c, from its
// source.
func (t *Traffic) In(ctx context.Context, namespace string, c policy.Condition) traffic.Answer {
	if c.Traffic == nil {
		return traffic.Answer{Unknown: "the condition names no traffic source"}
	}
	src, window := *c.Traffic, c.Idle
	if t.Querier == nil {
		return traffic.Answer{Source: src.Describe(), Window: window, Unknown: "nsman runs without a Prometheus to ask (--prometheus-url)"}
	}
	a := t.answer(asked{src: src, window: window}, true)
	a.once.Do(func() { a.read(ctx, t) })
	out := traffic.Answer{Source: a.source, Window: window}
	if a.unknown != "" {
		out.Unknown = a.unknown
		return out
	}
	out.Requests, out.Note = a.requests[namespace], a.notes[namespace]
	return out
}

// Ahead runs, each on a goroutine of its own, the queries of m's IDLE
// conditions that read traffic, ahead of their first need: a sweep that
// will most likely ask them (a rule over many namespaces, as its last
// status says) asks them beside its other reads (the namespaces, the
// activity) rather than after. The namespaces that need one then wait for
// what is left of it; Settle ends those that none needed.
func (t *Traffic) Ahead(ctx context.Context, m policy.Manager) {
	if t.Querier == nil {
		return
	}
	t.mu.Lock()
	if t.cancelAhead == nil {
		t.aheadCtx, t.cancelAhead = context.WithCancel(ctx)
	}
	ctx = t.aheadCtx
	t.mu.Unlock()
	for _, p := range m.Policies {
		if c := p.Condition; c.Traffic != nil {
			a := t.answer(asked{src: *c.Traffic, window: c.Idle}, false)
			t.ahead.Go(func() { a.once.Do(func() { a.read(ctx, t) }) })
		}
	}
}

// Settle cancels the queries asked ahead (Ahead) that no namespace asked
// for, waits for every query asked ahead, and counts the queries as
// Queries does: once the sweep has evaluated its subjects, for its report.
func (t *Traffic) Settle() map[string]int {
	if t == nil {
		return nil
	}
	t.mu.Lock()
	cancel := t.cancelAhead
	t.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	t.ahead.Wait()
	return t.Queries()
}

// Queries counts the queries run so far that a namespace asked for, by
// result ("answered", "unanswered"); nil when none ran. One asked ahead
// (Ahead) that no namespace asked for is not counted.
func (t *Traffic) Queries() map[string]int {
	if t == nil {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	var n map[string]int
	for _, a := range t.answers {
		if !a.needed {
			continue
		}
		if n == nil {
			n = map[string]int{"answered": 0, "unanswered": 0}
		}
		if a.unknown != "" {
			n["unanswered"]++
		} else {
			n["answered"]++
		}
	}
	return n
}

// query is the PromQL of src over window, and src's preset (nil for a
// query of the platform's own).
func (t *Traffic) query(src traffic.Source, window time.Duration) (string, *traffic.Preset) {
	if p, ok := traffic.Lookup(src.Preset); ok {
		return p.PromQL(t.Match[p.Name], window), &p
	}
	return strings.ReplaceAll(src.Query, traffic.Window, traffic.Range(window)), nil
}

// answer is the answer of what k asks, made at its first need (needed:
// a namespace asks for it) or ahead of it: one per query, which sources
// and windows that build the same query share.
func (t *Traffic) answer(k asked, needed bool) sourced {
	t.mu.Lock()
	defer t.mu.Unlock()
	if a, ok := t.asked[k]; ok {
		a.needed = a.needed || needed
		return a
	}
	if t.answers == nil {
		t.answers, t.asked = map[string]*answer{}, map[asked]sourced{}
	}
	q, preset := t.query(k.src, k.window)
	a, ok := t.answers[q]
	if !ok {
		a = &answer{q: q, preset: preset}
		t.answers[q] = a
	}
	a.needed = a.needed || needed
	t.asked[k] = sourced{answer: a, source: k.src.Describe()}
	return t.asked[k]
}

// read runs q and keeps its requests by namespace: each series by its
// preset's label, else by `namespace`. An answer whose series name no
// namespace, or with no series at all, is no answer: the counter is not
// where the query looks (or Prometheus has yet to scrape it), and every
// namespace would look unused.
func (a *answer) read(ctx context.Context, t *Traffic) {
	preset := a.preset
	vec, err := t.Querier.Query(ctx, a.q)
	if err != nil {
		a.unknown = status.Truncate(err.Error(), 512) // it reaches statuses and Events
		return
	}
	by, whose := "namespace", "the query"
	if preset != nil {
		by, whose = preset.By, "preset "+preset.Name+"'s query"
	}
	switch {
	case len(vec) == 0 && preset != nil:
		a.unknown = fmt.Sprintf("%s found no series of %s in the window: is it scraped, and pinned where --traffic-match says?", whose, preset.Selector(t.Match[preset.Name]))
		return
	case len(vec) == 0:
		a.unknown = "the query answered no series, which tells no namespace used from unused: it must answer one for each namespace it counts, 0 when unused"
		return
	}
	a.requests, a.notes = map[string]float64{}, map[string]string{}
	named := 0
	for _, s := range vec {
		value := string(s.Metric[model.LabelName(by)])
		namespaces := []string{value}
		if preset != nil {
			namespaces = preset.Namespaces(value, func(ns string) bool { return t.exists(ctx, ns) })
		} else if value == "" {
			namespaces = nil
		}
		if len(namespaces) > 0 {
			named++
		}
		for _, ns := range namespaces {
			a.requests[ns] += float64(s.Value)
			if len(namespaces) > 1 && s.Value > 0 {
				a.notes[ns] = fmt.Sprintf("%s %s may be any of %s", by, value, strings.Join(namespaces, ", "))
			}
		}
	}
	if named == 0 && len(vec) > 0 {
		a.unknown = fmt.Sprintf("none of the %d series %s answered has a label %s naming a namespace", len(vec), whose, by)
		a.requests, a.notes = nil, nil
	}
}
