package cmd

import (
	"bytes"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/nsman/nsman/internal/tell"
	"github.com/nsman/nsman/report"
	"github.com/nsman/nsman/sweep"
)

// sweepConfig parses args as nsman sweep's flags and builds the config.
func sweepConfig(t *testing.T, args []string) (sweep.Config, error) {
	t.Helper()
	o := newSweepOptions()
	c := o.command()
	if err := c.ParseFlags(args); err != nil {
		t.Fatal(err)
	}
	return o.config(c.Flags())
}

func TestSweepConfigTrustedAndProtected(t *testing.T) {
	floor := []string{"kube-system", "kube-public", "kube-node-lease"}
	tests := []struct {
		name                    string
		podNamespace            string
		args                    []string
		wantTrusted, wantProtec []string
	}{
		// Unset, --trusted-namespaces trusts the namespace nsman runs in
		// alone: none outside a pod, never one that may not exist.
		{name: "outside a pod", args: nil,
			wantTrusted: []string{}, wantProtec: []string{"kube-system", "kube-public", "kube-node-lease", "default", "namespace-manager"}},
		{name: "in a pod", podNamespace: "ops", args: nil,
			wantTrusted: []string{"ops"}, wantProtec: []string{"kube-system", "kube-public", "kube-node-lease", "default", "namespace-manager", "ops"}},
		{name: "in a pod in namespace-manager", podNamespace: "namespace-manager", args: nil,
			wantTrusted: []string{"namespace-manager"}, wantProtec: []string{"kube-system", "kube-public", "kube-node-lease", "default", "namespace-manager"}},
		// --trusted-namespaces replaces its default, the own namespace
		// included; --protected-namespaces replaces default and
		// namespace-manager, and adds to the floor and the own namespace.
		{name: "flags", podNamespace: "ops", args: []string{"--trusted-namespaces", "ci", "--protected-namespaces", "prod"},
			wantTrusted: []string{"ci"}, wantProtec: append(slices.Clone(floor), "prod", "ops")},
		{name: "protected flag naming part of the floor", podNamespace: "ops", args: []string{"--protected-namespaces", "kube-system,ops"},
			wantTrusted: []string{"ops"}, wantProtec: append(slices.Clone(floor), "ops")},
		{name: "empty protected flag", podNamespace: "ops", args: []string{"--protected-namespaces="},
			wantTrusted: []string{"ops"}, wantProtec: append(slices.Clone(floor), "ops")},
		{name: "empty protected flag outside a pod", args: []string{"--protected-namespaces="},
			wantTrusted: []string{}, wantProtec: floor},
		{name: "empty trusted flag", podNamespace: "ops", args: []string{"--trusted-namespaces="},
			wantTrusted: []string{}, wantProtec: []string{"kube-system", "kube-public", "kube-node-lease", "default", "namespace-manager", "ops"}},
		{name: "trusted flag naming namespace-manager outside a pod", args: []string{"--trusted-namespaces", "namespace-manager"},
			wantTrusted: []string{"namespace-manager"}, wantProtec: []string{"kube-system", "kube-public", "kube-node-lease", "default", "namespace-manager"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("POD_NAMESPACE", tt.podNamespace)
			cfg, err := sweepConfig(t, tt.args)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(cfg.TrustedNamespaces, tt.wantTrusted) || !slices.Equal(cfg.ProtectedNamespaces, tt.wantProtec) {
				t.Errorf("trusted %v protected %v, want %v and %v", cfg.TrustedNamespaces, cfg.ProtectedNamespaces, tt.wantTrusted, tt.wantProtec)
			}
		})
	}
}

func TestSweepConfigShards(t *testing.T) {
	for _, tt := range []struct {
		name       string
		jobIndex   string // "" leaves JOB_COMPLETION_INDEX unset
		args       []string
		index, cnt int
	}{
		{name: "unsharded", args: nil, index: 0, cnt: 1},
		{name: "flags", args: []string{"--shard-count", "4", "--shard-index", "3"}, index: 3, cnt: 4},
		{name: "index from an Indexed Job", jobIndex: "2", args: []string{"--shard-count", "4"}, index: 2, cnt: 4},
		{name: "the flag wins over the Job", jobIndex: "2", args: []string{"--shard-count", "4", "--shard-index", "1"}, index: 1, cnt: 4},
		{name: "a one-pod Indexed Job", jobIndex: "0", args: nil, index: 0, cnt: 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if tt.jobIndex != "" {
				t.Setenv(jobIndexEnv, tt.jobIndex)
			}
			cfg, err := sweepConfig(t, tt.args)
			if err != nil {
				t.Fatal(err)
			}
			if cfg.ShardIndex != tt.index || cfg.ShardCount != tt.cnt {
				t.Errorf("shard %d of %d, want %d of %d", cfg.ShardIndex, cfg.ShardCount, tt.index, tt.cnt)
			}
		})
	}
}

func TestSweepConfigRejectsBadShards(t *testing.T) {
	for _, tt := range []struct {
		name, jobIndex string
		args           []string
	}{
		{name: "index out of range", args: []string{"--shard-count", "2", "--shard-index", "2"}},
		{name: "negative index", args: []string{"--shard-count", "2", "--shard-index", "-1"}},
		{name: "no shards", args: []string{"--shard-count", "0"}},
		{name: "Job index beyond the count", jobIndex: "4", args: []string{"--shard-count", "4"}},
		{name: "Job index without a count", jobIndex: "1"},
		{name: "Job index not a number", jobIndex: "one", args: []string{"--shard-count", "4"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if tt.jobIndex != "" {
				t.Setenv(jobIndexEnv, tt.jobIndex)
			}
			if _, err := sweepConfig(t, tt.args); err == nil {
				t.Errorf("%s=%q %v accepted", jobIndexEnv, tt.jobIndex, tt.args)
			}
		})
	}
}

func TestSweepConfigRejects(t *testing.T) {
	for name, args := range map[string][]string{
		"--at without --dry-run": {"--at", "2026-01-01T00:00:00Z"},
		"--at not RFC 3339":      {"--dry-run", "--at", "tomorrow"},
		"unknown output":         {"-o", "jsonpath"},
		"unknown state":          {"--state", "fired,sleeping"},
		"no workers":             {"--concurrency", "0"},
		"negative max actions":   {"--max-actions", "-1"},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := sweepConfig(t, args); err == nil {
				t.Errorf("%v accepted", args)
			}
		})
	}
}

// secretURL is a Slack incoming webhook's URL: its path is the credential.
const secretURL = "https://hooks.slack.com/services/T0SECRET/B0SECRET/XXSECRET"

// writeFile writes content to a new file and returns its path.
func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestSweepNotifyURLFile: --notify-url-file reads the URL once, trimmed,
// as --notify-url would give it; --notify-signing-key-file the key that
// signs notifications.
func TestSweepNotifyURLFile(t *testing.T) {
	urlFile := writeFile(t, "url", "\n  "+secretURL+"\n")
	keyFile := writeFile(t, "key", "notify-key\n")
	for _, tt := range []struct {
		name    string
		args    []string
		wantURL string
		wantKey string
	}{
		{name: "none"},
		{name: "flag", args: []string{"--notify-url", secretURL}, wantURL: secretURL},
		{name: "file", args: []string{"--notify-url-file", urlFile}, wantURL: secretURL},
		{name: "file and key", args: []string{"--notify-url-file", urlFile, "--notify-signing-key-file", keyFile}, wantURL: secretURL, wantKey: "notify-key"},
		{name: "flag and key", args: []string{"--notify-url", secretURL, "--notify-signing-key-file", keyFile}, wantURL: secretURL, wantKey: "notify-key"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := sweepConfig(t, tt.args)
			if err != nil {
				t.Fatal(err)
			}
			if cfg.NotifyURL != tt.wantURL || string(cfg.NotifySigningKey) != tt.wantKey {
				t.Errorf("URL %q, key %q; want %q, %q", cfg.NotifyURL, cfg.NotifySigningKey, tt.wantURL, tt.wantKey)
			}
		})
	}
}

// TestSweepNotifyFlagsRefused: a notification URL given twice, empty,
// unreadable or malformed, and a signing key without a URL or empty, are
// refused; the message names the file, and never shows the URL's path,
// whether it came from the flag or the file.
func TestSweepNotifyFlagsRefused(t *testing.T) {
	dir := t.TempDir()
	empty := writeFile(t, "empty", " \n")
	urlFile := writeFile(t, "url", secretURL)
	noScheme := writeFile(t, "no-scheme", "hooks.slack.com/services/T0SECRET/B0SECRET/XXSECRET")
	twoLines := writeFile(t, "two-lines", secretURL+"\nhttps://other.example/XXSECRET")
	ftp := writeFile(t, "ftp", "ftp://hooks.slack.com/services/T0SECRET/B0SECRET/XXSECRET")
	emptyKey := writeFile(t, "empty-key", "\n")
	huge := writeFile(t, "huge", secretURL+strings.Repeat("XXSECRET", 2<<10))
	for _, tt := range []struct {
		name string
		args []string
		want string // in the message
	}{
		{"both", []string{"--notify-url", secretURL, "--notify-url-file", urlFile}, "give one, not both"},
		{"empty file", []string{"--notify-url-file", empty}, "--notify-url-file " + empty + " is empty"},
		{"no file", []string{"--notify-url-file", filepath.Join(dir, "none")}, filepath.Join(dir, "none")},
		{"no scheme in the file", []string{"--notify-url-file", noScheme}, "--notify-url-file " + noScheme + ": want an absolute http or https URL"},
		{"two lines in the file", []string{"--notify-url-file", twoLines}, "--notify-url-file " + twoLines + ": want"},
		{"ftp in the file", []string{"--notify-url-file", ftp}, "--notify-url-file " + ftp + ": want"},
		{"no scheme", []string{"--notify-url", "hooks.slack.com/services/T0SECRET/B0SECRET/XXSECRET"}, "--notify-url (a URL that is not shown): want an absolute http or https URL"},
		{"ftp", []string{"--notify-url", "ftp://hooks.slack.com/services/T0SECRET/B0SECRET/XXSECRET"}, "--notify-url ftp://hooks.slack.com/…: want"},
		{"no host", []string{"--notify-url", "https:///services/T0SECRET/B0SECRET/XXSECRET"}, "--notify-url (a URL that is not shown): want"},
		{"bad escape", []string{"--notify-url", "https://hooks.slack.com/services/T0SECRET/%zz/XXSECRET"}, "--notify-url (a URL that is not shown): want"},
		{"a file too big", []string{"--notify-url-file", huge}, "--notify-url-file " + huge + " holds more than 8192 bytes"},
		{"key without a URL", []string{"--notify-signing-key-file", emptyKey}, "needs --notify-url, --notify-url-file or --notify-channel"},
		{"channel not a DNS label", []string{"--notify-channel", "Team_A=" + urlFile}, "--notify-channel \"Team_A=" + urlFile + "\": the name must be a DNS label"},
		{"channel file holds no URL", []string{"--notify-channel", "team-a=" + ftp}, "--notify-channel team-a " + ftp + ": want an absolute http or https URL"},
		{"channel format of no channel", []string{"--notify-channel-format", "team-a=slack"}, "no --notify-channel team-a=FILE"},
		{"empty key", []string{"--notify-url", secretURL, "--notify-signing-key-file", emptyKey}, "--notify-signing-key-file " + emptyKey + " is empty"},
		{"no key file", []string{"--notify-url", secretURL, "--notify-signing-key-file", filepath.Join(dir, "no-key")}, filepath.Join(dir, "no-key")},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := sweepConfig(t, tt.args)
			if err == nil {
				t.Fatalf("%v accepted", tt.args)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q, want it to contain %q", err, tt.want)
			}
			if strings.Contains(err.Error(), "SECRET") {
				t.Errorf("error %q shows the URL's path", err)
			}
		})
	}
}

// TestSweepNotifyURLNotEchoed: nsman sweep with a malformed --notify-url
// exits as a usage error, before any cluster is contacted, and its output
// shows nothing of the URL but its scheme and host.
func TestSweepNotifyURLNotEchoed(t *testing.T) {
	kubeconfig := filepath.Join(t.TempDir(), "none")
	for _, args := range [][]string{
		{"--notify-url", "ftp://user:PWSECRET@hooks.slack.com/services/T0SECRET/B0SECRET/XXSECRET?token=QSECRET"},
		{"--notify-url", "hooks.slack.com/services/T0SECRET/B0SECRET/XXSECRET"},
		{"--notify-url-file", writeFile(t, "url", "ftp://hooks.slack.com/services/T0SECRET/B0SECRET/XXSECRET")},
	} {
		var stdout, stderr bytes.Buffer
		code := Execute(t.Context(), append([]string{"sweep", "--kubeconfig", kubeconfig}, args...), &stdout, &stderr)
		if code != ExitUsage {
			t.Errorf("%v: exit code %d, want %d", args, code, ExitUsage)
		}
		if out := stdout.String() + stderr.String(); !strings.Contains(out, "want an absolute http or https URL") || strings.Contains(out, "SECRET") {
			t.Errorf("%v: output %q, want the refusal without the URL's path, query or password", args, out)
		}
	}
}

// TestSweepNotifyFormat: --notify-format takes each registered format,
// teams and googlechat among them; any other is a usage error, before any
// cluster is contacted, that lists the formats there are.
func TestSweepNotifyFormat(t *testing.T) {
	for _, format := range []string{"json", "slack", "teams", "googlechat"} {
		cfg, err := sweepConfig(t, []string{"--notify-url", secretURL, "--notify-format", format})
		if err != nil || cfg.NotifyFormat != format {
			t.Errorf("--notify-format %s: %q, %v", format, cfg.NotifyFormat, err)
		}
	}
	kubeconfig := filepath.Join(t.TempDir(), "none")
	for _, format := range []string{"xml", "Teams", "google-chat", "text"} {
		var stdout, stderr bytes.Buffer
		code := Execute(t.Context(), []string{"sweep", "--kubeconfig", kubeconfig, "--notify-url", secretURL, "--notify-format", format}, &stdout, &stderr)
		want := fmt.Sprintf("--notify-format must be one of json, slack, teams, googlechat, not %q", format)
		if code != ExitUsage || !strings.Contains(stderr.String(), want) {
			t.Errorf("--notify-format %s: exit code %d, output %q; want %d and %q", format, code, stdout.String()+stderr.String(), ExitUsage, want)
		}
	}
}

// TestPushMetricsURLNotLogged: a push that fails is logged with the
// Pushgateway's URL as notifications log theirs, scheme and host: its
// path or user may be a credential.
func TestPushMetricsURLNotLogged(t *testing.T) {
	gateway := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "no", http.StatusInternalServerError)
	}))
	defer gateway.Close()
	host := strings.TrimPrefix(gateway.URL, "http://")
	// No one listens there: the error is the HTTP client's, which quotes
	// the URL with its password masked.
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()
	closedHost := strings.TrimPrefix(closed.URL, "http://")
	for _, url := range []string{
		gateway.URL + "/T0SECRET/pushgateway",
		"http://user:PWSECRET@" + host + "/TOKENSECRET",
		"http://user:PWSECRET@" + closedHost + "/TOKENSECRET",
	} {
		host := strings.TrimPrefix(strings.TrimPrefix(url, "http://user:PWSECRET@"), "http://")
		host, _, _ = strings.Cut(host, "/")
		var logs bytes.Buffer
		o := newSweepOptions()
		o.pushgatewayURL = url
		o.pushMetrics(t.Context(), report.Report{}, false, slog.New(slog.NewTextHandler(&logs, nil)))
		if !strings.Contains(logs.String(), "metrics not pushed") || !strings.Contains(logs.String(), "http://"+host+"/…") || strings.Contains(logs.String(), "SECRET") {
			t.Errorf("--pushgateway-url %s: logged %q, want the failure with the URL's scheme and host alone", url, logs.String())
		}
	}
}

// TestClusterNameGroupsThePush: --cluster-name pushes the metrics to the
// group of that cluster; unset, to the group of the job alone, as before.
func TestClusterNameGroupsThePush(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "/metrics/job/nsman"},
		{[]string{"--cluster-name=eu-west-1"}, "/metrics/job/nsman/cluster/eu-west-1"},
	} {
		var pushed []string
		gateway := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			if req.Method == http.MethodPost {
				pushed = append(pushed, req.URL.Path)
			}
			http.Error(w, "no totals here", http.StatusNotFound)
		}))
		o := newSweepOptions()
		if err := o.command().ParseFlags(append(tc.args, "--pushgateway-url="+gateway.URL)); err != nil {
			t.Fatal(err)
		}
		o.pushMetrics(t.Context(), report.Report{}, false, slog.New(slog.DiscardHandler))
		gateway.Close()
		if !slices.Equal(pushed, []string{tc.want}) {
			t.Errorf("%q: pushed to %q, want %s", tc.args, pushed, tc.want)
		}
	}
	if _, err := sweepConfig(t, []string{"--cluster-name=\xff"}); err == nil || !strings.Contains(err.Error(), "--cluster-name") {
		t.Errorf("--cluster-name not UTF-8: %v, want it refused", err)
	}
}

// TestSweepNotifyChannels: --notify-channel NAME=FILE (repeatable) and
// --notify-channel-format NAME=FORMAT reach the sweep's configuration,
// alone or beside the default, and a key may sign channels alone.
func TestSweepNotifyChannels(t *testing.T) {
	urlFile := writeFile(t, "url", "\n  "+secretURL+"\n")
	keyFile := writeFile(t, "key", "notify-key\n")
	cfg, err := sweepConfig(t, []string{"--notify-url", secretURL, "--notify-channel", "team-a=" + urlFile, "--notify-channel", "team-b=" + urlFile, "--notify-channel-format", "team-b=teams"})
	if err != nil {
		t.Fatal(err)
	}
	want := []tell.Channel{{Name: "team-a", URL: secretURL}, {Name: "team-b", URL: secretURL, Format: "teams"}}
	if !slices.Equal(cfg.NotifyChannels, want) {
		t.Errorf("channels %+v, want %+v", cfg.NotifyChannels, want)
	}
	cfg, err = sweepConfig(t, []string{"--notify-channel", "team-a=" + urlFile, "--notify-signing-key-file", keyFile})
	if err != nil || cfg.NotifyURL != "" || len(cfg.NotifyChannels) != 1 || string(cfg.NotifySigningKey) != "notify-key" {
		t.Errorf("channel alone, signed: %+v, %v", cfg, err)
	}
}
