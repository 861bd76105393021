package cmd

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
)

// TestSweepWebhookAllowFlag: --webhook-allow takes host names, *.domain
// suffixes and CIDRs, repeated or comma-separated; anything else is a usage
// error that names the entry, before any cluster is contacted.
func TestSweepWebhookAllowFlag(t *testing.T) {
	valid := [][]string{
		nil,
		{"--webhook-allow", "hook.example.com"},
		{"--webhook-allow", "*.example.com,10.20.0.0/16", "--webhook-allow", "fd00::/8"},
		{"--webhook-allow=receiver.tools.svc.cluster.local,10.0.0.7"},
	}
	for _, args := range valid {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			o := newSweepOptions()
			c := o.command()
			if err := c.ParseFlags(args); err != nil {
				t.Fatal(err)
			}
			opts, err := o.webhookOptions()
			if err != nil {
				t.Fatalf("webhookOptions: %v", err)
			}
			if len(args) > 0 && opts.Allow == nil {
				t.Errorf("%v: no allow list in the webhook options", args)
			}
		})
	}

	invalid := []struct {
		value string
		entry string // named in the message
	}{
		{"http://hook.example.com", "http://hook.example.com"},
		{"hook.example.com:8443", "hook.example.com:8443"},
		{"10.20.0.1/16", "10.20.0.1/16"},
		{"10.20.0.0/40", "10.20.0.0/40"},
		{"ok.example.com,a..b", "a..b"},
		{"*", "*"},
		{"a.*.example.com", "a.*.example.com"},
		{"ok.example.com,,10.0.0.0/8", ""},
	}
	// A kubeconfig that does not exist: were the flag accepted, the sweep
	// would fail later, for want of a cluster, with another message.
	kubeconfig := filepath.Join(t.TempDir(), "none")
	for _, tt := range invalid {
		t.Run(tt.value, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := Execute(t.Context(), []string{"sweep", "--kubeconfig", kubeconfig, "--webhook-allow", tt.value}, &stdout, &stderr)
			if code != ExitUsage {
				t.Errorf("exit code %d, want %d", code, ExitUsage)
			}
			msg := stderr.String()
			if want := `--webhook-allow: entry "` + tt.entry + `"`; !strings.Contains(msg, want) {
				t.Errorf("stderr %q, want it to contain %q", msg, want)
			}
			if stdout.Len() != 0 {
				t.Errorf("stdout %q, want nothing: no sweep ran", stdout.String())
			}
		})
	}
}
