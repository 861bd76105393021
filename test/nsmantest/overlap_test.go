package nsmantest

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// sweepServer serves requests as the API server would, through s as sweep
// name's, after delay.
func sweepServer(t *testing.T, s *Spans, name string, delay time.Duration) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(s.Wrap(name, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(delay)
	})))
	t.Cleanup(srv.Close)
	return srv
}

// requests makes n requests to srv, one after another.
func requests(t *testing.T, srv *httptest.Server, n int) {
	t.Helper()
	for range n {
		resp, err := srv.Client().Get(srv.URL)
		if err != nil {
			t.Error(err)
			return
		}
		resp.Body.Close()
	}
}

// failing records whether Check failed, instead of failing the test.
type failing struct {
	testing.TB
	errors []string
}

func (f *failing) Error(args ...any) {
	for _, a := range args {
		f.errors = append(f.errors, a.(error).Error())
	}
}

func (f *failing) Logf(string, ...any) {}

func TestSpansOfSweepsOneAfterAnotherDoNotOverlap(t *testing.T) {
	s := NewSpans()
	a, b := sweepServer(t, s, "a", time.Millisecond), sweepServer(t, s, "b", time.Millisecond)
	requests(t, a, 3)
	requests(t, b, 3)
	err := Overlap(s.Measured())
	if err == nil || !strings.Contains(err.Error(), "did not overlap: sweep b made its first request") {
		t.Fatalf("sweeps one after another: %v, want that they did not overlap", err)
	}
	f := &failing{TB: t}
	s.Check(f)
	if len(f.errors) != 1 {
		t.Errorf("Check of sweeps one after another: errors %q, want one", f.errors)
	}
}

func TestSpansOfSweepsSideBySideOverlap(t *testing.T) {
	s := NewSpans()
	a, b, c := sweepServer(t, s, "a", 0), sweepServer(t, s, "b", 0), sweepServer(t, s, "c", 0)
	// Each begins before any ends.
	requests(t, a, 1)
	requests(t, b, 1)
	requests(t, c, 1)
	requests(t, a, 1)
	requests(t, b, 1)
	requests(t, c, 1)
	if err := Overlap(s.Measured()); err != nil {
		t.Fatal(err)
	}
	s.Check(t)
}

func TestSpansOfTwoSweepsOfThreeOverlapping(t *testing.T) {
	s := NewSpans()
	a, b, c := sweepServer(t, s, "a", 0), sweepServer(t, s, "b", 0), sweepServer(t, s, "c", 0)
	requests(t, a, 1)
	requests(t, b, 1)
	requests(t, a, 1)
	requests(t, b, 1)
	requests(t, c, 2) // after a and b ended
	if err := Overlap(s.Measured()); err == nil || !strings.Contains(err.Error(), "sweep c made its first request") {
		t.Fatalf("a third sweep after the other two: %v, want that it did not overlap", err)
	}
}

func TestSpansProveNothingWithoutTwoSweepsThatMadeRequests(t *testing.T) {
	s := NewSpans()
	a := sweepServer(t, s, "a", 0)
	requests(t, a, 2)
	if err := Overlap(s.Measured()); err == nil {
		t.Error("one sweep: no error")
	}
	sweepServer(t, s, "b", 0) // wrapped, but never used
	if err := Overlap(s.Measured()); err == nil || !strings.Contains(err.Error(), "sweep b made no request") {
		t.Errorf("a sweep without requests: %v", err)
	}
}

// Sweeps started together but scheduled apart are held until all have
// begun, and overlap.
func TestSpansStartTogether(t *testing.T) {
	s := NewSpans().StartTogether(3)
	servers := []*httptest.Server{sweepServer(t, s, "a", 0), sweepServer(t, s, "b", 0), sweepServer(t, s, "c", 0)}
	var wg sync.WaitGroup
	began := time.Now()
	for i, srv := range servers {
		wg.Go(func() {
			time.Sleep(time.Duration(i) * 300 * time.Millisecond) // c starts 600 ms after a
			requests(t, srv, 1)
		})
	}
	wg.Wait()
	if err := Overlap(s.Measured()); err != nil {
		t.Fatal(err)
	}
	if first := s.Measured()[0]; first.Last.Sub(began) < 600*time.Millisecond {
		t.Errorf("a's first request answered %s after it began, before c started", first.Last.Sub(began))
	}
}

// Sweeps run one after another are held in vain, for the wait only, and do
// not overlap.
func TestSpansStartTogetherOfSweepsOneAfterAnother(t *testing.T) {
	s := NewSpans().StartTogether(2)
	s.wait = 200 * time.Millisecond
	a, b := sweepServer(t, s, "a", 0), sweepServer(t, s, "b", 0)
	began := time.Now()
	requests(t, a, 2)
	requests(t, b, 2)
	if took := time.Since(began); took < s.wait || took > 10*s.wait {
		t.Errorf("took %s, want the wait of %s once", took, s.wait)
	}
	if err := Overlap(s.Measured()); err == nil {
		t.Error("sweeps one after another, held to start together: no error")
	}
}
