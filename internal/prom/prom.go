package prom

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/prometheus/client_golang/api"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
)

// Config is how to reach a Prometheus, and how much of an answer to take.
type Config struct {
	// URL is its base URL (http://prometheus.monitoring:9090).
	URL string
	// TokenFile holds a bearer token sent with each query; CAFile the PEM
	// certificates that sign its serving certificate (beside the system's).
	TokenFile, CAFile string
	// Headers are sent with each query (X-Scope-OrgID for Mimir, Cortex
	// and Thanos' tenancy).
	Headers map[string]string
	// Timeout bounds each query, on both sides: the server evaluates it
	// for no longer.
	Timeout time.Duration
	// MaxSeries and MaxBytes bound an answer: one beyond either is no
	// answer.
	MaxSeries int
	MaxBytes  int64
}

// Defaults of Config's bounds.
const (
	DefaultTimeout   = 30 * time.Second
	DefaultMaxSeries = 20000
	// DefaultMaxBytes holds DefaultMaxSeries series of a label or two
	// many times over.
	DefaultMaxBytes = 16 << 20
)

// Client asks one Prometheus instant queries.
type Client struct {
	api v1.API
	cfg Config
	// name is the URL as errors say it, its password hidden: they reach
	// reports, statuses and Events.
	name string
}

// New returns a client of cfg, its token and CA read now.
func New(cfg Config) (*Client, error) {
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.MaxSeries <= 0 {
		cfg.MaxSeries = DefaultMaxSeries
	}
	if cfg.MaxBytes <= 0 {
		cfg.MaxBytes = DefaultMaxBytes
	}
	rt, err := transport(cfg)
	if err != nil {
		return nil, err
	}
	name := "the Prometheus"
	if u, err := url.Parse(cfg.URL); err == nil {
		name = u.Redacted()
	}
	c, err := api.NewClient(api.Config{Address: cfg.URL, RoundTripper: rt})
	if err != nil {
		return nil, fmt.Errorf("prometheus %s: %w", name, err)
	}
	return &Client{api: v1.NewAPI(c), cfg: cfg, name: name}, nil
}

// transport sends cfg's token and headers, trusts cfg's CA, and cuts an
// answer at cfg.MaxBytes.
func transport(cfg Config) (http.RoundTripper, error) {
	base := http.DefaultTransport.(*http.Transport).Clone()
	if cfg.CAFile != "" {
		pem, err := os.ReadFile(cfg.CAFile)
		if err != nil {
			return nil, fmt.Errorf("prometheus CA file: %w", err)
		}
		pool, err := x509.SystemCertPool()
		if err != nil {
			pool = x509.NewCertPool()
		}
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("prometheus CA file %s: no PEM certificate in it", cfg.CAFile)
		}
		base.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	headers := http.Header{}
	for k, v := range cfg.Headers {
		headers.Set(k, v)
	}
	if cfg.TokenFile != "" {
		token, err := os.ReadFile(cfg.TokenFile)
		if err != nil {
			return nil, fmt.Errorf("prometheus token file: %w", err)
		}
		headers.Set("Authorization", "Bearer "+strings.TrimSpace(string(token)))
	}
	return &bounded{next: base, headers: headers, max: cfg.MaxBytes}, nil
}

// bounded adds headers to each request and cuts each answer at max bytes.
type bounded struct {
	next    http.RoundTripper
	headers http.Header
	max     int64
}

func (b *bounded) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	for k, v := range b.headers {
		req.Header[k] = v
	}
	resp, err := b.next.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	resp.Body = &cut{ReadCloser: resp.Body, left: b.max, max: b.max}
	return resp, nil
}

// ErrTooLarge is an answer beyond Config.MaxBytes or Config.MaxSeries.
var ErrTooLarge = errors.New("answer too large")

// cut reads at most max bytes, then fails.
type cut struct {
	io.ReadCloser
	left, max int64
}

func (c *cut) Read(p []byte) (int, error) {
	if c.left <= 0 {
		return 0, fmt.Errorf("%w: more than %d bytes", ErrTooLarge, c.max)
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.ReadCloser.Read(p)
	c.left -= int64(n)
	return n, err
}

// Query runs the instant query q now and returns its vector: an answer
// of another type, beyond the bounds, or late is an error.
func (c *Client) Query(ctx context.Context, q string) (model.Vector, error) {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	// One series past the cap is asked for, so that an answer cut there
	// is told from one that fits; a server that ignores limit is cut by
	// bytes instead.
	v, _, err := c.api.Query(ctx, q, time.Time{}, v1.WithTimeout(c.cfg.Timeout), v1.WithLimit(uint64(c.cfg.MaxSeries)+1))
	if err != nil {
		return nil, fmt.Errorf("prometheus %s: %w", c.name, err)
	}
	vec, ok := v.(model.Vector)
	if !ok {
		return nil, fmt.Errorf("prometheus %s: the answer is a %s, not a vector", c.name, v.Type())
	}
	if len(vec) > c.cfg.MaxSeries {
		return nil, fmt.Errorf("prometheus %s: %w: more than %d series (--prometheus-max-series)", c.name, ErrTooLarge, c.cfg.MaxSeries)
	}
	return vec, nil
}
