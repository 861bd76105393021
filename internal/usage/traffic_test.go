package usage

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/common/model"

	"github.com/nsman/nsman/internal/cluster"
	"github.com/nsman/nsman/policy"
	"github.com/nsman/nsman/policy/traffic"
)

// countingQuerier answers each query with answer's vector, counting
// queries.
type countingQuerier struct {
	mu      sync.Mutex
	queries []string
	answer  func(q string) (model.Vector, error)
}

func (c *countingQuerier) Query(_ context.Context, q string) (model.Vector, error) {
	c.mu.Lock()
	c.queries = append(c.queries, q)
	c.mu.Unlock()
	return c.answer(q)
}

func sample(label, value string, requests float64) *model.Sample {
	return &model.Sample{Metric: model.Metric{model.LabelName(label): model.LabelValue(value)}, Value: model.SampleValue(requests)}
}

func idleWith(src traffic.Source, window time.Duration) policy.Condition {
	return policy.Condition{Type: policy.ConditionIdle, Idle: window, Traffic: &src}
}

func namespacesOf(names ...string) func(context.Context) (map[string]cluster.Namespace, error) {
	return func(context.Context) (map[string]cluster.Namespace, error) {
		all := map[string]cluster.Namespace{}
		for _, n := range names {
			all[n] = cluster.Namespace{Name: n}
		}
		return all, nil
	}
}

// However many namespaces ask, at once, each distinct source and window is
// one query a sweep; each namespace gets its own requests.
func TestTrafficOneQueryPerSourceAndWindow(t *testing.T) {
	q := &countingQuerier{answer: func(string) (model.Vector, error) {
		return model.Vector{sample("namespace", "shop", 5), sample("namespace", "quiet", 0)}, nil
	}}
	tr := NewTraffic(TrafficConfig{Querier: q}, namespacesOf("shop", "quiet"))
	nginx := idleWith(traffic.Source{Preset: "ingress-nginx"}, time.Hour)
	var wg sync.WaitGroup
	var shop atomic.Int64
	for i := range 200 {
		wg.Go(func() {
			ns := []string{"shop", "quiet", "none"}[i%3]
			a := tr.In(t.Context(), ns, nginx)
			if a.Unknown != "" || a.Source != "preset ingress-nginx" || a.Window != time.Hour {
				t.Errorf("%s: %+v", ns, a)
			}
			if ns == "shop" && a.Requests == 5 {
				shop.Add(1)
			} else if ns != "shop" && a.Requests != 0 {
				t.Errorf("%s: %v requests, want none", ns, a.Requests)
			}
		})
	}
	wg.Wait()
	if shop.Load() != 67 {
		t.Errorf("shop saw its 5 requests %d times, want 67", shop.Load())
	}
	tr.In(t.Context(), "shop", idleWith(traffic.Source{Preset: "ingress-nginx"}, 2*time.Hour))
	tr.In(t.Context(), "shop", idleWith(traffic.Source{Query: `sum by (namespace) (increase(hits[$window]))`}, time.Hour))
	if len(q.queries) != 3 {
		t.Fatalf("%d queries, want 3 (two windows of the preset, one query): %q", len(q.queries), q.queries)
	}
	if want := `sum by (namespace) (increase(hits[3600s]))`; q.queries[2] != want {
		t.Errorf("the query ran as %s, want %s", q.queries[2], want)
	}
	if got := tr.Queries(); got["answered"] != 3 || got["unanswered"] != 0 {
		t.Errorf("queries %v, want 3 answered", got)
	}
}

// No Prometheus, an error, a preset's empty answer and series that name
// no namespace are no answer, each saying why; Traefik's requests count
// for each namespace their service may be of, saying so.
func TestTrafficUnknownAndShared(t *testing.T) {
	nginx := idleWith(traffic.Source{Preset: "ingress-nginx"}, time.Hour)
	own := idleWith(traffic.Source{Query: "sum(increase(hits[$window]))"}, time.Hour)
	for _, c := range []struct {
		name   string
		answer func(string) (model.Vector, error)
		c      policy.Condition
		want   string
	}{
		{"down", func(string) (model.Vector, error) { return nil, errors.New("connection refused") }, nginx, "connection refused"},
		{"a long error, cut", func(string) (model.Vector, error) { return nil, errors.New("bad_data: " + strings.Repeat("x", 10000)) }, nginx, "bad_data: xxx"},
		{"empty preset answer", func(string) (model.Vector, error) { return model.Vector{}, nil }, nginx, `found no series of nginx_ingress_controller_requests{namespace="ingress-nginx"}`},
		{"empty query answer", func(string) (model.Vector, error) { return model.Vector{}, nil }, own, "the query answered no series"},
		{"no namespace label", func(string) (model.Vector, error) { return model.Vector{sample("job", "x", 3)}, nil }, own, "has a label namespace"},
	} {
		tr := NewTraffic(TrafficConfig{Querier: &countingQuerier{answer: c.answer}}, namespacesOf("shop"))
		if a := tr.In(t.Context(), "shop", c.c); !strings.Contains(a.Unknown, c.want) {
			t.Errorf("%s: %+v, want unknown saying %q", c.name, a, c.want)
		}
		if a := tr.In(t.Context(), "shop", c.c); len(a.Unknown) > 512 {
			t.Errorf("%s: why is %d bytes, want at most %d", c.name, len(a.Unknown), 512)
		}
		if got := tr.Queries(); got["unanswered"] != 1 {
			t.Errorf("%s: queries %v, want one unanswered", c.name, got)
		}
	}
	if a := NewTraffic(TrafficConfig{}, namespacesOf()).In(t.Context(), "shop", nginx); !strings.Contains(a.Unknown, "--prometheus-url") {
		t.Errorf("no Prometheus: %+v", a)
	}
	q := &countingQuerier{answer: func(string) (model.Vector, error) {
		return model.Vector{sample("service", "team-a-web-80@kubernetes", 4), sample("service", "shop-web-80@kubernetes", 1)}, nil
	}}
	tr := NewTraffic(TrafficConfig{Querier: q}, namespacesOf("team", "team-a", "shop"))
	traefik := idleWith(traffic.Source{Preset: "traefik"}, time.Hour)
	for ns, want := range map[string]float64{"team": 4, "team-a": 4, "shop": 1} {
		a := tr.In(t.Context(), ns, traefik)
		if a.Requests != want || (ns != "shop") != strings.Contains(a.Note, "may be any of team, team-a") {
			t.Errorf("%s: %+v, want %v requests and a note only where shared", ns, a, want)
		}
	}
}

// Once the query of a source and window has run, a namespace that asks
// costs a lookup: no query built again (a sweep asks for each of its
// namespaces, 1,000 in make bench's traffic part), no allocation. A query
// of the platform's own that builds the same PromQL as a preset shares its
// answer, and says where it reads as its condition names it.
func TestTrafficAnsweredByLookup(t *testing.T) {
	q := &countingQuerier{answer: func(string) (model.Vector, error) {
		return model.Vector{sample("namespace", "shop", 5)}, nil
	}}
	tr := NewTraffic(TrafficConfig{Querier: q}, namespacesOf("shop"))
	nginx := idleWith(traffic.Source{Preset: "ingress-nginx"}, time.Hour)
	tr.In(t.Context(), "shop", nginx)
	if allocs := testing.AllocsPerRun(100, func() {
		if a := tr.In(t.Context(), "shop", nginx); a.Requests != 5 || a.Source != "preset ingress-nginx" {
			t.Fatalf("%+v, want 5 requests of preset ingress-nginx", a)
		}
	}); allocs != 0 {
		t.Errorf("a namespace asking for an answered query allocates %v times, want none", allocs)
	}
	p, _ := traffic.Lookup("ingress-nginx")
	same := idleWith(traffic.Source{Query: strings.ReplaceAll(p.PromQL("", time.Hour), "3600s", traffic.Window)}, time.Hour)
	if a := tr.In(t.Context(), "shop", same); a.Requests != 5 || a.Source != "a query" || len(q.queries) != 1 {
		t.Errorf("the preset's PromQL as a query of the platform's own: %+v after %d queries, want its 5 requests, said of a query, after one", a, len(q.queries))
	}
}

// blockingQuerier answers once release is closed, or fails when its
// context ends first; started says a query began.
type blockingQuerier struct {
	started, release chan struct{}
	answer           model.Vector
}

func (b *blockingQuerier) Query(ctx context.Context, _ string) (model.Vector, error) {
	close(b.started)
	select {
	case <-b.release:
		return b.answer, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// A rule's traffic queries asked ahead run before any namespace asks, one
// per source and window; a namespace that asks then waits for that
// answer, no query of its own, and the query counts once.
func TestTrafficAhead(t *testing.T) {
	b := &blockingQuerier{started: make(chan struct{}), release: make(chan struct{}), answer: model.Vector{sample("namespace", "shop", 5)}}
	tr := NewTraffic(TrafficConfig{Querier: b}, namespacesOf("shop"))
	nginx := idleWith(traffic.Source{Preset: "ingress-nginx"}, time.Hour)
	m := policy.Manager{Policies: []policy.Policy{{Name: "ttl", Condition: policy.Condition{Type: policy.ConditionTTL}}, {Name: "a", Condition: nginx}, {Name: "b", Condition: nginx}}}
	tr.Ahead(t.Context(), m)
	select {
	case <-b.started: // a second query would close started twice, and panic
	case <-time.After(10 * time.Second):
		t.Fatal("the query asked ahead did not start before any namespace asked")
	}
	if got := tr.Queries(); got != nil {
		t.Errorf("queries %v before any namespace asked, want none counted", got)
	}
	answered := make(chan traffic.Answer)
	go func() { answered <- tr.In(t.Context(), "shop", nginx) }()
	close(b.release)
	if a := <-answered; a.Requests != 5 || a.Unknown != "" {
		t.Errorf("the namespace's answer %+v, want the 5 requests asked ahead", a)
	}
	if got := tr.Settle(); got["answered"] != 1 {
		t.Errorf("settled: queries %v, want one answered", got)
	}
	if got := tr.Queries(); got["answered"] != 1 || got["unanswered"] != 0 {
		t.Errorf("queries %v, want one answered", got)
	}
}

// A query asked ahead that no namespace needed is cancelled by Settle, which
// waits for it, and is not counted; without a Prometheus nothing is asked.
func TestTrafficAheadUnneeded(t *testing.T) {
	b := &blockingQuerier{started: make(chan struct{}), release: make(chan struct{})}
	tr := NewTraffic(TrafficConfig{Querier: b}, namespacesOf("shop"))
	m := policy.Manager{Policies: []policy.Policy{{Name: "a", Condition: idleWith(traffic.Source{Preset: "istio"}, time.Hour)}}}
	tr.Ahead(t.Context(), m)
	<-b.started
	settled := make(chan struct{})
	go func() { _ = tr.Settle(); close(settled) }()
	select {
	case <-settled:
	case <-time.After(10 * time.Second):
		t.Fatal("Settle did not end the query no namespace needed")
	}
	if got := tr.Queries(); got != nil {
		t.Errorf("queries %v, want none counted: no namespace needed it", got)
	}
	none := NewTraffic(TrafficConfig{}, namespacesOf("shop"))
	none.Ahead(t.Context(), m)
	_ = none.Settle()
	if got := none.Queries(); got != nil {
		t.Errorf("without a Prometheus: queries %v, want none", got)
	}
}
