package nsmantest

import (
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
)

// Delivery is one request a Receiver got.
type Delivery struct {
	Header http.Header
	Body   []byte
}

// Receiver is a webhook endpoint on loopback that records what it gets and
// answers with Status (200 unless set).
type Receiver struct {
	URL string

	mu         sync.Mutex
	status     int
	deliveries []Delivery
}

// NewReceiver starts a Receiver, stopped when t ends.
func NewReceiver(t testing.TB) *Receiver {
	r := &Receiver{status: http.StatusOK}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.deliveries = append(r.deliveries, Delivery{Header: req.Header.Clone(), Body: body})
		status := r.status
		r.mu.Unlock()
		w.WriteHeader(status)
	}))
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

// Deliveries returns what was received so far.
func (r *Receiver) Deliveries() []Delivery {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Delivery(nil), r.deliveries...)
}
