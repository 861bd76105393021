package cmd

import (
	"bytes"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"k8s.io/client-go/kubernetes/fake"

	"github.com/nsman/nsman/sweep"
)

// adopt takes the installed sweep's flags that decide what it sees and may
// do, unless given here; not its files, URLs, output or shards, and not
// flags this nsman does not know (an installed nsman may be newer).
func TestAdoptTakesWhatDecidesTheOutcome(t *testing.T) {
	o := newSweepOptions()
	c := o.command()
	if err := c.Flags().Parse([]string{"--dry-run", "--max-hold=2h"}); err != nil {
		t.Fatal(err)
	}
	inst := &installation{namespace: "nsman", name: "nsman", args: []string{
		"--log-format=json", "--trusted-namespaces=platform,nsman", "--protected-namespaces", "default,prod",
		"--webhook-allow=*.hooks.example.com", "--max-hold=24h", "--max-actions=5", "-l", "team=a",
		"--notify-url-file=/var/run/secrets/notify/url", "--shard-count=3", "--a-flag-of-a-newer-nsman=x", "--argocd-namespace=gitops",
	}}
	taken, err := o.adopt(c.Flags(), inst)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"--selector=team=a", "--max-actions=5", "--trusted-namespaces=platform,nsman", "--protected-namespaces=default,prod", "--webhook-allow=*.hooks.example.com", "--argocd-namespace=gitops"}
	if !slices.Equal(taken, want) {
		t.Errorf("taken %q, want %q", taken, want)
	}
	if o.own != "nsman" || !slices.Equal(o.trustedNamespaces, []string{"platform", "nsman"}) || o.maxHold.String() != "2h0m0s" ||
		o.notifyURLFile != "" || o.shardCount != 1 || o.log.format != "" {
		t.Errorf("options %+v: want the CronJob's namespace, its trusted namespaces, this command's --max-hold, and no file, shard or log flag of the CronJob", o)
	}
	cfg, err := o.config(c.Flags())
	if err != nil {
		t.Fatal(err)
	}
	// Trusted as the CronJob says (its list replaces the default); its
	// namespace protected, as in its pod.
	if !slices.Equal(cfg.TrustedNamespaces, []string{"platform", "nsman"}) || !slices.Contains(cfg.ProtectedNamespaces, "nsman") || !slices.Contains(cfg.ProtectedNamespaces, "prod") {
		t.Errorf("trusted %q, protected %q", cfg.TrustedNamespaces, cfg.ProtectedNamespaces)
	}
	// Which Application a tracking id names decides OWNER_GONE's outcome.
	if cfg.ArgoCDNamespace != "gitops" {
		t.Errorf("Argo CD's namespace %q, want the CronJob's", cfg.ArgoCDNamespace)
	}
}

// A flag whose value names a variable of the pod's environment, which the
// kubelet expands, is not taken as written: the dry run stops and says so,
// unless the flag is given here.
func TestAdoptRefusesPodVariables(t *testing.T) {
	inst := &installation{namespace: "nsman", name: "nsman", args: []string{"--trusted-namespaces=$(POD_NAMESPACE),ci"}}
	o := newSweepOptions()
	c := o.command()
	if _, err := o.adopt(c.Flags(), inst); err == nil || !strings.Contains(err.Error(), "--trusted-namespaces=$(POD_NAMESPACE),ci names a variable of its pod's environment") {
		t.Errorf("adopt: %v, want it refused, naming the flag", err)
	}
	o = newSweepOptions()
	c = o.command()
	if err := c.Flags().Parse([]string{"--trusted-namespaces=nsman,ci"}); err != nil {
		t.Fatal(err)
	}
	if _, err := o.adopt(c.Flags(), inst); err != nil {
		t.Errorf("adopt with the flag given here: %v", err)
	}
}

// A laptop dry run takes the CronJob's freezes, each range as given, and
// their time zone; not its calendar file, which is the pod's.
func TestAdoptTakesFreezes(t *testing.T) {
	o := newSweepOptions()
	c := o.command()
	if err := c.Flags().Parse([]string{"--dry-run"}); err != nil {
		t.Fatal(err)
	}
	inst := &installation{namespace: "nsman", name: "nsman", args: []string{
		"--freeze=2026-12-24/2026-12-26", "--freeze", "2026-12-31/2027-01-01", "--freeze-time-zone=Europe/Berlin",
		"--freeze-file=/etc/nsman/freeze/calendar", "--stuck-after=30m", "--reclaim=false",
	}}
	taken, err := o.adopt(c.Flags(), inst)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"--stuck-after=30m", "--reclaim=false", "--freeze=2026-12-24/2026-12-26", "--freeze=2026-12-31/2027-01-01", "--freeze-time-zone=Europe/Berlin"}
	if !slices.Equal(taken, want) {
		t.Errorf("taken %q, want %q", taken, want)
	}
	cfg, err := o.config(c.Flags())
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Freezes) != 2 || cfg.Freezes[0].String() != "2026-12-23T23:00:00Z/2026-12-26T23:00:00Z" || o.freezeFile != "" {
		t.Errorf("freezes %v, file %q; want the two ranges in Berlin's days, and no file", cfg.Freezes, o.freezeFile)
	}
}

// A dry run from outside the cluster with --config-from none says that it
// takes this command's flags alone, not that it looked for a CronJob and
// found none; with auto, in a cluster without one, it says that.
func TestConfigFromNoneSaysSo(t *testing.T) {
	t.Setenv("POD_NAMESPACE", "")
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	for from, want := range map[string]string{
		configFromNone: `msg="--config-from none: this command's flags alone"`,
		configFromAuto: `msg="dry run with this command's flags alone: no nsman CronJob in the cluster`,
	} {
		o := newSweepOptions()
		c := o.command()
		if err := c.Flags().Parse([]string{"--dry-run", "--config-from", from}); err != nil {
			t.Fatal(err)
		}
		var logs bytes.Buffer
		if _, err := o.asInstalled(t.Context(), c.Flags(), fake.NewClientset(), sweep.Config{}, slog.New(slog.NewTextHandler(&logs, nil))); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(logs.String(), want) {
			t.Errorf("--config-from %s logged %q, want %s", from, logs.String(), want)
		}
	}
}

// nsman due -A looks at every namespace, whatever -n the installed sweep
// has; without -A it takes the CronJob's -n, as a dry run does.
func TestDueAllNamespacesTakesNoInstalledNamespace(t *testing.T) {
	inst := &installation{namespace: "nsman", name: "nsman", args: []string{"-n", "team-a"}}
	for _, c := range []struct {
		args []string
		want string
	}{{[]string{"-A"}, ""}, {nil, "team-a"}} {
		due := newDueCommand()
		if err := due.Flags().Parse(c.args); err != nil {
			t.Fatal(err)
		}
		if err := due.PreRunE(due, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := newSweepOptions().adopt(due.Flags(), inst); err != nil {
			t.Fatal(err)
		}
		if got := due.Flags().Lookup("namespace").Value.String(); got != c.want {
			t.Errorf("%q: namespace %q, want %q", c.args, got, c.want)
		}
	}
}
