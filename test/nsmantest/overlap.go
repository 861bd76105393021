package nsmantest

import (
	"fmt"
	"net/http"
	"net/http/httputil"
	"slices"
	"sync"
	"testing"
	"time"
)

// Span is the time one sweep talked to the API server, as a proxy between
// them saw it: from the arrival of its first request to the end of the
// answer to its last.
type Span struct {
	Sweep       string
	First, Last time.Time
	Requests    int
}

// Overlap reports whether sweeps run side by side did overlap in time:
// whether the latest first request came before the earliest last answer,
// so that there was a moment when every sweep had begun talking to the API
// server and none had finished (for intervals on a line, the same as every
// two of them sharing a moment). Fewer than two spans, or a sweep that made
// no request, prove nothing and are an error too.
func Overlap(spans []Span) error {
	if len(spans) < 2 {
		return fmt.Errorf("%d sweeps measured: nothing ran side by side", len(spans))
	}
	for _, s := range spans {
		if s.Requests == 0 {
			return fmt.Errorf("sweep %s made no request through its proxy: its time is unknown", s.Sweep)
		}
	}
	latestFirst := slices.MaxFunc(spans, func(a, b Span) int { return a.First.Compare(b.First) })
	earliestLast := slices.MinFunc(spans, func(a, b Span) int { return a.Last.Compare(b.Last) })
	if !latestFirst.First.Before(earliestLast.Last) {
		return fmt.Errorf("the sweeps did not overlap: sweep %s made its first request %s after sweep %s had its last answer (%s)",
			latestFirst.Sweep, latestFirst.First.Sub(earliestLast.Last).Round(time.Millisecond), earliestLast.Sweep, describe(spans))
	}
	return nil
}

// describe lists spans relative to the earliest first request.
func describe(spans []Span) string {
	origin := slices.MinFunc(spans, func(a, b Span) int { return a.First.Compare(b.First) }).First
	var out []byte
	for i, s := range spans {
		if i > 0 {
			out = append(out, "; "...)
		}
		out = fmt.Appendf(out, "%s: %d requests from +%s to +%s", s.Sweep, s.Requests,
			s.First.Sub(origin).Round(time.Millisecond), s.Last.Sub(origin).Round(time.Millisecond))
	}
	return string(out)
}

// StartTogetherWait bounds how long Spans.StartTogether holds the first
// requests of sweeps that were to start together.
const StartTogetherWait = 10 * time.Second

// Spans measures sweeps run side by side, each through a handler of its
// own (Kubeconfig, Wrap), and checks that they overlapped (Check). The
// measure is taken between the sweeps and the API server, where neither the
// test's goroutines nor the sweeps' reports can make it up.
type Spans struct {
	mu    sync.Mutex
	spans map[string]*Span
	order []string
	// started counts the sweeps that have made a request.
	started int

	// together is the number of sweeps whose requests are held until each
	// of them has made one; release is closed then, or StartTogetherWait
	// after the first request.
	together        int
	wait            time.Duration
	release         chan struct{}
	timing, opening sync.Once
}

// NewSpans returns an empty Spans.
func NewSpans() *Spans {
	return &Spans{spans: map[string]*Span{}}
}

// StartTogether holds the requests of the sweeps until n of them have made
// one, or for StartTogetherWait after the first: n sweeps started at once
// then begin together, and overlap however the scheduler runs them. Sweeps
// run one after another are held in vain, and Check fails them all the
// same. It returns s.
func (s *Spans) StartTogether(n int) *Spans {
	s.together, s.wait, s.release = n, StartTogetherWait, make(chan struct{})
	return s
}

// Kubeconfig returns a kubeconfig for sweep name that reaches the API
// server through a proxy measuring the sweep's span.
func (s *Spans) Kubeconfig(t testing.TB, e *Env, name string) string {
	t.Helper()
	return e.KubeconfigThrough(t, func(p *httputil.ReverseProxy) http.Handler { return s.Wrap(name, p) })
}

// Wrap returns next measuring the requests through it as sweep name's.
func (s *Spans) Wrap(name string, next http.Handler) http.Handler {
	s.mu.Lock()
	if _, ok := s.spans[name]; !ok {
		s.spans[name] = &Span{Sweep: name}
		s.order = append(s.order, name)
	}
	span := s.spans[name]
	s.mu.Unlock()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		if span.Requests == 0 {
			span.First = time.Now()
			s.started++
		}
		span.Requests++
		started := s.started
		s.mu.Unlock()
		s.hold(r, started)
		defer func() {
			// Deferred: a handler that aborts the answer (a fault
			// injected) ends the request too.
			answered := time.Now()
			s.mu.Lock()
			if answered.After(span.Last) {
				span.Last = answered
			}
			s.mu.Unlock()
		}()
		next.ServeHTTP(w, r)
	})
}

// hold keeps a request, when StartTogether asked for it, until started (the
// sweeps that have made a request) reaches the number to start together.
func (s *Spans) hold(r *http.Request, started int) {
	if s.release == nil {
		return
	}
	open := func() { s.opening.Do(func() { close(s.release) }) }
	s.timing.Do(func() { time.AfterFunc(s.wait, open) })
	if started >= s.together {
		open()
	}
	select {
	case <-s.release:
	case <-r.Context().Done():
	}
}

// Measured returns the spans measured so far, in the order the sweeps were
// wrapped.
func (s *Spans) Measured() []Span {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Span, 0, len(s.order))
	for _, name := range s.order {
		out = append(out, *s.spans[name])
	}
	return out
}

// Check fails t unless the sweeps overlapped in time (Overlap), and logs
// for how long they all ran at once.
func (s *Spans) Check(t testing.TB) {
	t.Helper()
	spans := s.Measured()
	if err := Overlap(spans); err != nil {
		t.Error(err)
		return
	}
	latestFirst := slices.MaxFunc(spans, func(a, b Span) int { return a.First.Compare(b.First) }).First
	earliestLast := slices.MinFunc(spans, func(a, b Span) int { return a.Last.Compare(b.Last) }).Last
	t.Logf("%d sweeps overlapped for %s", len(spans), earliestLast.Sub(latestFirst).Round(time.Millisecond))
}
