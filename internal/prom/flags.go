package prom

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/prometheus/common/model"
	"github.com/spf13/pflag"

	"github.com/nsman/nsman/internal/duration"
)

// Options are the flags of the Prometheus nsman sweep asks, and how its
// traffic presets are pinned.
type Options struct {
	Config
	headers []string
	match   []string
	// Match are the matchers of --traffic-match, by preset.
	Match map[string]string
}

// AddFlags binds o to fs.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.URL, "prometheus-url", "", "the Prometheus (or Thanos, Mimir, Cortex query frontend) that IDLE conditions with traffic ask, one query per source and window per sweep (default: none; such a condition waits, saying so)")
	fs.StringVar(&o.TokenFile, "prometheus-token-file", "", "file with a bearer token sent to --prometheus-url (read once, at start)")
	fs.StringVar(&o.CAFile, "prometheus-ca-file", "", "file of PEM certificates that sign --prometheus-url's serving certificate, besides the system's")
	fs.StringArrayVar(&o.headers, "prometheus-header", nil, "NAME=VALUE: a header sent to --prometheus-url, e.g. X-Scope-OrgID=team (repeatable)")
	o.Timeout = DefaultTimeout
	fs.Var((*duration.Value)(&o.Timeout), "prometheus-timeout", "bound of each query of --prometheus-url, on both sides")
	fs.IntVar(&o.MaxSeries, "prometheus-max-series", DefaultMaxSeries, "an answer of more series than this is no answer: the IDLE conditions that asked wait, saying so")
	fs.StringArrayVar(&o.match, "traffic-match", nil, "PRESET=MATCHERS: count only the series of a traffic preset that these PromQL matchers select, where it is scraped from (repeatable; default: ingress-nginx=namespace=\"ingress-nginx\", traefik=namespace=\"traefik\"; istio needs none)")
}

// Querier is a Prometheus to ask.
type Querier interface {
	Query(ctx context.Context, q string) (model.Vector, error)
}

// Querier checks the flags, --traffic-match's presets among known, and
// returns the Prometheus they name: nil without --prometheus-url.
func (o *Options) Querier(known []string) (Querier, error) {
	o.Headers, o.Match = map[string]string{}, map[string]string{}
	for _, h := range o.headers {
		name, value, ok := strings.Cut(h, "=")
		if !ok || name == "" {
			return nil, fmt.Errorf("--prometheus-header %q: want NAME=VALUE", h)
		}
		o.Headers[name] = value
	}
	for _, m := range o.match {
		preset, matchers, ok := strings.Cut(m, "=")
		switch {
		case !ok || matchers == "":
			return nil, fmt.Errorf("--traffic-match %q: want PRESET=MATCHERS, e.g. ingress-nginx=job=\"ingress-nginx-controller-metrics\"", m)
		case !slices.Contains(known, preset):
			return nil, fmt.Errorf("--traffic-match %q: no preset %q; the presets are %s", m, preset, strings.Join(known, ", "))
		}
		o.Match[preset] = matchers
	}
	if o.URL == "" {
		return nil, nil
	}
	if u, err := url.Parse(o.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, errors.New("--prometheus-url: want an http or https URL, e.g. http://prometheus.monitoring:9090")
	}
	c, err := New(o.Config)
	if err != nil {
		return nil, err
	}
	return c, nil
}
