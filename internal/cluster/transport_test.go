package cluster

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

func TestAPIObserverUsesTheServersClock(t *testing.T) {
	server := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Date", server.Format(http.TimeFormat))
	}))
	defer srv.Close()

	local := server.Add(time.Hour) // the local clock is an hour ahead
	o := NewAPIObserver(func() time.Time { return local })
	if _, ok := o.Now(); ok {
		t.Fatal("Now known before any response")
	}
	client := &http.Client{Transport: o.Wrap(http.DefaultTransport)}
	for _, method := range []string{http.MethodGet, http.MethodGet, http.MethodPatch} {
		req, _ := http.NewRequest(method, srv.URL, nil)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	now, ok := o.Now()
	if !ok || !now.Equal(server) {
		t.Errorf("Now() = %v, %v; want the server's %v", now, ok, server)
	}
	if skew := o.Skew(); skew != time.Hour {
		t.Errorf("Skew() = %v, want 1h", skew)
	}
	local = local.Add(30 * time.Second)
	if now, _ := o.Now(); !now.Equal(server.Add(30 * time.Second)) {
		t.Errorf("Now() after 30s = %v, want %v", now, server.Add(30*time.Second))
	}
	if got := o.Requests(); got["get"] != 2 || got["patch"] != 1 || len(got) != 2 {
		t.Errorf("Requests() = %v; want 2 get, 1 patch", got)
	}
}
