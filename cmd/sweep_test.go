package cmd

import (
	"slices"
	"testing"

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
		{name: "outside a pod", args: nil,
			wantTrusted: []string{"namespace-manager"}, wantProtec: []string{"kube-system", "kube-public", "kube-node-lease", "default", "namespace-manager"}},
		{name: "in a pod", podNamespace: "ops", args: nil,
			wantTrusted: []string{"namespace-manager", "ops"}, wantProtec: []string{"kube-system", "kube-public", "kube-node-lease", "default", "namespace-manager", "ops"}},
		{name: "in a pod in namespace-manager", podNamespace: "namespace-manager", args: nil,
			wantTrusted: []string{"namespace-manager"}, wantProtec: []string{"kube-system", "kube-public", "kube-node-lease", "default", "namespace-manager"}},
		// --trusted-namespaces replaces its default, the own namespace
		// included; --protected-namespaces replaces default and
		// namespace-manager, and adds to the floor and the own namespace.
		{name: "flags", podNamespace: "ops", args: []string{"--trusted-namespaces", "ci", "--protected-namespaces", "prod"},
			wantTrusted: []string{"ci"}, wantProtec: append(slices.Clone(floor), "prod", "ops")},
		{name: "protected flag naming part of the floor", podNamespace: "ops", args: []string{"--protected-namespaces", "kube-system,ops"},
			wantTrusted: []string{"namespace-manager", "ops"}, wantProtec: append(slices.Clone(floor), "ops")},
		{name: "empty protected flag", podNamespace: "ops", args: []string{"--protected-namespaces="},
			wantTrusted: []string{"namespace-manager", "ops"}, wantProtec: append(slices.Clone(floor), "ops")},
		{name: "empty protected flag outside a pod", args: []string{"--protected-namespaces="},
			wantTrusted: []string{"namespace-manager"}, wantProtec: floor},
		{name: "empty trusted flag", podNamespace: "ops", args: []string{"--trusted-namespaces="},
			wantTrusted: []string{}, wantProtec: []string{"kube-system", "kube-public", "kube-node-lease", "default", "namespace-manager", "ops"}},
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
		"unknown output":         {"-o", "yaml"},
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
