package nsmantest

import (
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Delivery is one request a Receiver got.
type Delivery struct {
	Path   string
	Header http.Header
	Body   []byte
	// Received is when the request arrived; Answered when the Receiver
	// answered it, after its hold.
	Received, Answered time.Time
}

// Receiver is a webhook endpoint on loopback that records what it gets and
// answers with Status (200 unless set), after holding each request for the
// hold set (none unless set).
type Receiver struct {
	URL string

	mu         sync.Mutex
	status     int
	hold       time.Duration
	deliveries []Delivery
	arrived    chan struct{}
	released   chan struct{}
	release    sync.Once
	handler    http.Handler
	arrivals   atomic.Int64
	// services are the URLs of the Services it is reachable as (ServiceURL).
	services map[string]string
}

// NewReceiver starts a Receiver, stopped when t ends.
func NewReceiver(t testing.TB) *Receiver {
	r := &Receiver{status: http.StatusOK, arrived: make(chan struct{}, 1024), released: make(chan struct{})}
	r.handler = http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		d := Delivery{Path: req.URL.Path, Header: req.Header.Clone(), Body: body, Received: time.Now()}
		r.mu.Lock()
		status, hold := r.status, r.hold
		r.mu.Unlock()
		r.arrivals.Add(1)
		select {
		case r.arrived <- struct{}{}:
		default:
		}
		select {
		case <-time.After(hold):
		case <-r.released:
		case <-req.Context().Done():
		}
		d.Answered = time.Now()
		r.mu.Lock()
		r.deliveries = append(r.deliveries, d)
		r.mu.Unlock()
		w.WriteHeader(status)
	})
	srv := httptest.NewServer(r.handler)
	t.Cleanup(srv.Close)
	r.URL = srv.URL
	return r
}

// SetStatus sets the status code of later answers.
func (r *Receiver) SetStatus(code int) {
	r.mu.Lock()
	r.status = code
	r.mu.Unlock()
}

// SetHold makes the Receiver hold each later request for d before it
// answers: a slow receiver.
func (r *Receiver) SetHold(d time.Duration) {
	r.mu.Lock()
	r.hold = d
	r.mu.Unlock()
}

// Release ends the hold of every request, now and later.
func (r *Receiver) Release() { r.release.Do(func() { close(r.released) }) }

// WaitArrivals waits until n more requests have arrived (before their
// hold), failing t after a minute.
func (r *Receiver) WaitArrivals(t testing.TB, n int) {
	t.Helper()
	for i := range n {
		select {
		case <-r.arrived:
		case <-time.After(time.Minute):
			t.Fatalf("%d of %d webhook requests arrived within a minute", i, n)
		}
	}
}

// Arrivals is the number of requests that have arrived, answered or not.
func (r *Receiver) Arrivals() int { return int(r.arrivals.Load()) }

// Deliveries returns the requests answered so far, in the order answered.
func (r *Receiver) Deliveries() []Delivery {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Delivery(nil), r.deliveries...)
}
