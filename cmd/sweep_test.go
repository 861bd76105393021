package cmd

import (
	"slices"
	"testing"
)

func TestSweepConfigDefaultsIncludeOwnNamespace(t *testing.T) {
	tests := []struct {
		name                    string
		podNamespace            string
		args                    []string
		wantTrusted, wantProtec []string
	}{
		{name: "outside a pod", args: nil,
			wantTrusted: []string{"namespace-manager"}, wantProtec: []string{"kube-system", "kube-public", "kube-node-lease", "default"}},
		{name: "in a pod", podNamespace: "ops", args: nil,
			wantTrusted: []string{"namespace-manager", "ops"}, wantProtec: []string{"kube-system", "kube-public", "kube-node-lease", "default", "ops"}},
		{name: "flags replace the defaults", podNamespace: "ops", args: []string{"--trusted-namespaces", "ci", "--protected-namespaces", "prod"},
			wantTrusted: []string{"ci"}, wantProtec: []string{"prod"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("POD_NAMESPACE", tt.podNamespace)
			o := newSweepOptions()
			c := o.command()
			if err := c.ParseFlags(tt.args); err != nil {
				t.Fatal(err)
			}
			cfg, err := o.config(c.Flags())
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(cfg.TrustedNamespaces, tt.wantTrusted) || !slices.Equal(cfg.ProtectedNamespaces, tt.wantProtec) {
				t.Errorf("trusted %v protected %v, want %v and %v", cfg.TrustedNamespaces, cfg.ProtectedNamespaces, tt.wantTrusted, tt.wantProtec)
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
			o := newSweepOptions()
			c := o.command()
			if err := c.ParseFlags(args); err != nil {
				t.Fatal(err)
			}
			if _, err := o.config(c.Flags()); err == nil {
				t.Errorf("%v accepted", args)
			}
		})
	}
}
