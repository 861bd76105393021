package nsmantest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/common/model"

	"github.com/nsman/nsman/test/cluster"
)

// prometheusModule is the module that test/tools/promtool pins and
// test/tools/build.sh builds the Prometheus server from, beside promtool.
const prometheusModule = "github.com/prometheus/prometheus"

// prometheusStartTimeout bounds how long Prometheus may take to be ready:
// on an empty storage directory it is ready in about a second.
const prometheusStartTimeout = 30 * time.Second

// ScrapeInterval is how often the Prometheus that StartPrometheus starts
// scrapes its targets.
const ScrapeInterval = time.Second

// ScrapeJob is one scrape_configs entry of the Prometheus that RunPrometheus
// starts: static targets, with the target labels that service discovery
// and relabelling would give them in a cluster.
type ScrapeJob struct {
	Name    string
	Targets []string // host:port, scraped at /metrics
	// Labels are target labels, as a real scrape config's relabelling sets
	// them from service discovery: a `namespace` label set to the scraped
	// pod's namespace, as the Prometheus Operator's ServiceMonitors and the
	// usual kubernetes_sd_configs relabelling do, clashes with an exported
	// label of that name.
	Labels map[string]string
	// HonorLabels keeps the exported labels on a clash; false, the default
	// of Prometheus and of the Operator, renames them exported_<name>.
	HonorLabels bool
}

// Prometheus is a Prometheus server of the pinned version that a test runs.
type Prometheus struct {
	URL string // http://127.0.0.1:PORT
	srv *server
}

// Stop kills Prometheus, as a test that plays "Prometheus is down" needs;
// from then on its URL refuses connections. It is stopped when the test
// ends in any case.
func (p *Prometheus) Stop() { p.srv.stop() }

// StartPrometheus runs the pinned Prometheus on a free loopback port,
// scraping the given host:port targets every ScrapeInterval in one job,
// "traffic", with an empty storage directory of its own, and returns its
// URL. It is stopped when t ends. The binary comes from `make
// control-plane`.
func StartPrometheus(t testing.TB, targets ...string) (url string) {
	t.Helper()
	return RunPrometheus(t, ScrapeJob{Name: "traffic", Targets: targets}).URL
}

// RunPrometheus is StartPrometheus with scrape jobs of the test's own, and
// returns the server, which the test may Stop.
func RunPrometheus(t testing.TB, jobs ...ScrapeJob) *Prometheus {
	t.Helper()
	p, err := LaunchPrometheus(t.Context(), t.TempDir(), jobs...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
	return p
}

// LaunchPrometheus starts the pinned Prometheus on a free loopback port,
// scraping jobs every ScrapeInterval, its configuration and storage in
// dir (made if it is not there), for a program (make demo's) as
// RunPrometheus does for a test; the caller stops it.
func LaunchPrometheus(ctx context.Context, dir string, jobs ...ScrapeJob) (*Prometheus, error) {
	bin, err := prometheusBinary()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	config := filepath.Join(dir, "prometheus.yml")
	if err := writePrometheusConfig(config, jobs); err != nil {
		return nil, err
	}
	// The port is free when asked for but could be taken before Prometheus
	// binds it; a start that fails that way is tried again.
	var errs []error
	for i := range 3 {
		p, err := startPrometheus(ctx, bin, config, filepath.Join(dir, "data-"+strconv.Itoa(i)))
		if err == nil {
			return p, nil
		}
		errs = append(errs, err)
	}
	return nil, fmt.Errorf("start Prometheus: %w", errors.Join(errs...))
}

// prometheusBinary is where test/tools/build.sh puts the pinned Prometheus.
func prometheusBinary() (string, error) {
	dir, err := cluster.ToolDir("promtool", prometheusModule, "prometheus")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "prometheus")
	if _, err := os.Stat(bin); err != nil {
		return "", cluster.MissingTool(bin)
	}
	return bin, nil
}

// writePrometheusConfig writes a configuration that scrapes jobs every
// ScrapeInterval, as JSON, which Prometheus reads as the YAML it is.
func writePrometheusConfig(path string, jobs []ScrapeJob) error {
	type static struct {
		Targets []string          `json:"targets"`
		Labels  map[string]string `json:"labels,omitempty"`
	}
	type job struct {
		Name        string   `json:"job_name"`
		HonorLabels bool     `json:"honor_labels"`
		Static      []static `json:"static_configs"`
	}
	interval := model.Duration(ScrapeInterval).String()
	config := struct {
		Global map[string]string `json:"global"`
		Jobs   []job             `json:"scrape_configs"`
	}{Global: map[string]string{"scrape_interval": interval, "scrape_timeout": interval}}
	for _, j := range jobs {
		config.Jobs = append(config.Jobs, job{Name: j.Name, HonorLabels: j.HonorLabels,
			Static: []static{{Targets: j.Targets, Labels: j.Labels}}})
	}
	b, err := json.MarshalIndent(config, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o600)
}

// startPrometheus starts bin once and waits until it is ready; on error
// nothing is left running.
func startPrometheus(ctx context.Context, bin, config, data string) (*Prometheus, error) {
	port, err := cluster.FreePort()
	if err != nil {
		return nil, err
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	args := []string{
		"--config.file=" + config,
		"--storage.tsdb.path=" + data,
		"--web.listen-address=" + addr,
		"--log.level=warn",
	}
	url := "http://" + addr
	s, err := startServer(ctx, bin, args, url+"/-/ready", prometheusStartTimeout)
	if err != nil {
		return nil, fmt.Errorf("prometheus on %s: %w", addr, err)
	}
	return &Prometheus{URL: url, srv: s}, nil
}

// prometheusQueryTimeout bounds one query of a test's Prometheus.
const prometheusQueryTimeout = 10 * time.Second

// QueryPrometheus runs the instant query promQL at the Prometheus at base
// and returns the vector it answers. An error is an answer that is not a
// vector, Prometheus's own error, or no answer at all (a stopped Prometheus
// refuses the connection: errors.Is(err, syscall.ECONNREFUSED)).
func QueryPrometheus(ctx context.Context, base, promQL string) (model.Vector, error) {
	ctx, cancel := context.WithTimeout(ctx, prometheusQueryTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet,
		base+"/api/v1/query?"+url.Values{"query": {promQL}}.Encode(), nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, err
	}
	var answer struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			ResultType string          `json:"resultType"`
			Result     json.RawMessage `json:"result"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &answer); err != nil {
		return nil, fmt.Errorf("query %q: %s: %w", promQL, resp.Status, err)
	}
	if answer.Status != "success" {
		return nil, fmt.Errorf("query %q: %s: %s", promQL, resp.Status, answer.Error)
	}
	if answer.Data.ResultType != "vector" {
		return nil, fmt.Errorf("query %q: a %s, not a vector", promQL, answer.Data.ResultType)
	}
	var v model.Vector
	if err := json.Unmarshal(answer.Data.Result, &v); err != nil {
		return nil, fmt.Errorf("query %q: %w", promQL, err)
	}
	return v, nil
}
