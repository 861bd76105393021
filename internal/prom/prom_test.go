package prom

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// prometheus answers /api/v1/query as Prometheus does, with the vector
// series makes, after delay; it records the last request's headers and
// form.
type prometheus struct {
	series  func(n int) string
	n       int
	delay   time.Duration
	headers http.Header
	limit   string
}

func (p *prometheus) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.headers, p.limit = r.Header.Clone(), r.FormValue("limit")
	select {
	case <-time.After(p.delay):
	case <-r.Context().Done():
		return
	}
	w.Header().Set("Content-Type", "application/json")
	var result []string
	for i := range p.n {
		result = append(result, p.series(i))
	}
	fmt.Fprintf(w, `{"status":"success","data":{"resultType":"vector","result":[%s]}}`, strings.Join(result, ","))
}

func byNamespace(i int) string {
	return fmt.Sprintf(`{"metric":{"namespace":"ns-%d"},"value":[1700000000,"%d"]}`, i, i)
}

func start(t *testing.T, p *prometheus, cfg Config) *Client {
	t.Helper()
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	cfg.URL = srv.URL
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// A query carries the token and the headers, asks for one series past
// the cap, and answers the vector.
func TestQuerySendsCredentials(t *testing.T) {
	token := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(token, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p := &prometheus{series: byNamespace, n: 3}
	c := start(t, p, Config{TokenFile: token, Headers: map[string]string{"X-Scope-OrgID": "team-a"}, MaxSeries: 10})
	vec, err := c.Query(t.Context(), "up")
	if err != nil {
		t.Fatal(err)
	}
	if len(vec) != 3 || vec[2].Metric["namespace"] != "ns-2" || vec[2].Value != 2 {
		t.Errorf("answer %v, want three series by namespace", vec)
	}
	if got := p.headers.Get("Authorization"); got != "Bearer s3cret" {
		t.Errorf("Authorization %q, want the token trimmed", got)
	}
	if got := p.headers.Get("X-Scope-OrgID"); got != "team-a" {
		t.Errorf("X-Scope-OrgID %q", got)
	}
	if p.limit != "11" {
		t.Errorf("limit %q, want one past the cap: 11", p.limit)
	}
}

// An answer beyond the series cap, the byte cap or the timeout is no
// answer, and says which.
func TestQueryBounds(t *testing.T) {
	for _, c := range []struct {
		name string
		p    *prometheus
		cfg  Config
		want string
	}{
		{"series", &prometheus{series: byNamespace, n: 50}, Config{MaxSeries: 49}, "more than 49 series"},
		{"bytes", &prometheus{series: byNamespace, n: 1000}, Config{MaxBytes: 4096}, "more than 4096 bytes"},
		{"time", &prometheus{series: byNamespace, n: 1, delay: 2 * time.Second}, Config{Timeout: 200 * time.Millisecond}, "deadline exceeded"},
	} {
		client := start(t, c.p, c.cfg)
		began := time.Now()
		_, err := client.Query(context.Background(), "up")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error saying %q", c.name, err, c.want)
		}
		if c.name != "time" && !errors.Is(err, ErrTooLarge) {
			t.Errorf("%s: %v is not ErrTooLarge", c.name, err)
		}
		if took := time.Since(began); took > time.Second {
			t.Errorf("%s: took %s", c.name, took)
		}
	}
}

// Flags that cannot be used are refused before any query; without a URL
// there is no Prometheus.
func TestQuerierFlags(t *testing.T) {
	known := []string{"ingress-nginx", "istio"}
	for _, c := range []struct {
		name           string
		headers, match []string
		want           string
	}{
		{"header without =", []string{"X-Scope-OrgID"}, nil, "want NAME=VALUE"},
		{"match of no preset", nil, []string{`haproxy=job="x"`}, `no preset "haproxy"`},
		{"match without matchers", nil, []string{"istio="}, "want PRESET=MATCHERS"},
	} {
		o := Options{headers: c.headers, match: c.match}
		o.URL = "http://prometheus:9090"
		if _, err := o.Querier(known); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
	for _, bad := range []string{"prometheus:9090", "ftp://prometheus", "http://"} {
		o := Options{Config: Config{URL: bad}}
		if _, err := o.Querier(known); err == nil || !strings.Contains(err.Error(), "want an http or https URL") {
			t.Errorf("--prometheus-url %s: %v, want it refused", bad, err)
		}
	}
	o := Options{match: []string{`ingress-nginx=job="ingress"`}}
	q, err := o.Querier(known)
	if err != nil || q != nil || o.Match["ingress-nginx"] != `job="ingress"` {
		t.Errorf("no URL: %v, %v, %v; want no Prometheus, the match kept", q, err, o.Match)
	}
}

// Errors name the Prometheus by its URL with the password hidden: they
// reach reports, statuses and Events.
func TestQueryErrorsHideThePassword(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, `{"status":"error","errorType":"bad_data","error":"parse error"}`, http.StatusBadRequest)
	}))
	t.Cleanup(srv.Close)
	c, err := New(Config{URL: strings.Replace(srv.URL, "http://", "http://nsman:PWSECRET@", 1)})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Query(t.Context(), "up(")
	if err == nil || strings.Contains(err.Error(), "PWSECRET") || !strings.Contains(err.Error(), "nsman:xxxxx@") {
		t.Errorf("error %v: want the URL with its password hidden", err)
	}
}
