package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"

	"github.com/nsman/nsman/policy"
	"github.com/nsman/nsman/sweep"
	"github.com/nsman/nsman/test/cluster"
)

// pageSize is what nsman pages its lists by (sweep.DefaultPageSize), so that
// the floor makes as many list requests.
const pageSize = sweep.DefaultPageSize

// floorConcurrency is nsman's default --concurrency; the floors use as many
// workers.
const floorConcurrency = sweep.DefaultConcurrency

// measurement is one row of the table.
type measurement struct {
	N    int
	What string
	Wall time.Duration
	// Audited are the requests the API server logged for nsman's
	// ServiceAccount during the measurement, by "verb resource".
	Audited map[string]int
	// HTTP are nsman's own counts by method (summary.requests), with the
	// discovery request the audit log does not show.
	HTTP map[string]int
	// MaxRSS is the child's peak resident set in KiB; zero for in-process.
	MaxRSS int64
	// PeakRSS, in a row that is the median of several runs, is the highest
	// MaxRSS among them.
	PeakRSS int64
	// States counts the managers by state, for sweeps.
	States map[sweep.State]int
	Note   string
	// Load is the 1-minute load average after the measurement.
	Load string
}

func (m measurement) total() int {
	n := 0
	for _, v := range m.Audited {
		n += v
	}
	return n
}

// writes counts the audited requests that are not reads.
func (m measurement) writes() int {
	n := 0
	for k, v := range m.Audited {
		switch strings.SplitN(k, " ", 2)[0] {
		case "get", "list", "watch":
		default:
			n += v
		}
	}
	return n
}

func (m measurement) count(verb, resource string) int { return m.Audited[verb+" "+resource] }

// auditCursor reads, from the audit log, the requests a user made since the
// last call.
type auditCursor struct {
	c    *cluster.Cluster
	user string
	seen int
}

func (a *auditCursor) next(ctx context.Context) (map[string]int, error) {
	reqs, err := a.c.AuditedRequests(ctx, a.user)
	if err != nil {
		return nil, err
	}
	if len(reqs) < a.seen {
		return nil, fmt.Errorf("audit log holds %d requests of %s, fewer than the %d read before: it was rotated or truncated", len(reqs), a.user, a.seen)
	}
	out := map[string]int{}
	for _, r := range reqs[a.seen:] {
		res := r.Resource
		if r.Subresource != "" {
			res += "/" + r.Subresource
		}
		out[r.Verb+" "+res]++
	}
	a.seen = len(reqs)
	return out, nil
}

// floorLists is the read floor: one paged LIST of every manager and one of
// every namespace (metadata only), by a minimal client.
func floorLists(ctx context.Context, cfg *rest.Config) (managers, namespaces int, err error) {
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return 0, 0, err
	}
	meta, err := metadata.NewForConfig(cfg)
	if err != nil {
		return 0, 0, err
	}
	opts := metav1.ListOptions{Limit: pageSize}
	for {
		list, err := dyn.Resource(sweep.ManagerResource).List(ctx, opts)
		if err != nil {
			return 0, 0, fmt.Errorf("list managers: %w", err)
		}
		managers += len(list.Items)
		if opts.Continue = list.GetContinue(); opts.Continue == "" {
			break
		}
	}
	opts = metav1.ListOptions{Limit: pageSize}
	for {
		list, err := meta.Resource(corev1.SchemeGroupVersion.WithResource("namespaces")).List(ctx, opts)
		if err != nil {
			return 0, 0, fmt.Errorf("list namespaces: %w", err)
		}
		namespaces += len(list.Items)
		if opts.Continue = list.GetContinue(); opts.Continue == "" {
			break
		}
	}
	return managers, namespaces, nil
}

// floorPodsChecks makes the pods check nsman makes for each PODS_SUCCEED
// manager (one list, limit 1), with as many workers as nsman.
func floorPodsChecks(ctx context.Context, cfg *rest.Config, namespaces []string) error {
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	return parallel(ctx, len(namespaces), func(ctx context.Context, i int) error {
		_, err := kube.CoreV1().Pods(namespaces[i]).List(ctx, metav1.ListOptions{
			LabelSelector: "app=e2e", FieldSelector: "status.phase!=Succeeded", Limit: 1,
		})
		return err
	})
}

// writeTarget is what a write floor needs of one manager.
type writeTarget struct {
	name, resourceVersion string
	uid                   types.UID
}

// prepareWriteFloor lists the managers of set and their namespaces (not
// timed: a sweep learns the same from its lists).
func prepareWriteFloor(ctx context.Context, cfg *rest.Config, set string) ([]writeTarget, error) {
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	meta, err := metadata.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	sel := metav1.ListOptions{LabelSelector: setLabel + "=" + set}
	nsList, err := meta.Resource(corev1.SchemeGroupVersion.WithResource("namespaces")).List(ctx, sel)
	if err != nil {
		return nil, err
	}
	uids := map[string]types.UID{}
	for _, ns := range nsList.Items {
		uids[ns.Name] = ns.UID
	}
	list, err := dyn.Resource(sweep.ManagerResource).List(ctx, sel)
	if err != nil {
		return nil, err
	}
	targets := make([]writeTarget, 0, len(list.Items))
	for _, m := range list.Items {
		targets = append(targets, writeTarget{name: m.GetName(), resourceVersion: m.GetResourceVersion(), uid: uids[m.GetName()]})
	}
	return targets, nil
}

// writeKind is which writes writeFloor makes for each manager.
type writeKind int

const (
	// claimDeleteDeactivate: the claim (a status merge patch, conditional
	// on the listed resourceVersion, that sets status.claim alone), the
	// namespace delete and the spec.deactivated merge patch, the writes
	// of a DELETE of another namespace, Event and record aside.
	claimDeleteDeactivate writeKind = iota
	// claimDelete: the same claim and the namespace delete: what nsman
	// writes for a manager that deletes its own namespace (the claim alone,
	// then the delete; no Event, record or deactivation).
	claimDelete
)

// writeFloor makes, per manager and with nsman's concurrency, the writes of
// a DELETE that which says: the claim (a merge patch of the status
// subresource conditional on the listed resourceVersion), the namespace
// delete with a UID precondition and background propagation, and with
// claimDeleteDeactivate the spec.deactivated merge patch.
func writeFloor(ctx context.Context, cfg *rest.Config, targets []writeTarget, which writeKind) error {
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	now := time.Now().UTC()
	background := metav1.DeletePropagationBackground
	const sweepID = "write-floor"
	return parallel(ctx, len(targets), func(ctx context.Context, i int) error {
		t := targets[i]
		managers := dyn.Resource(sweep.ManagerResource).Namespace(t.name)
		status := sweep.Status{Claim: &sweep.Claim{
			Policy: "cleanup", Action: policy.ActionDelete, Sweep: sweepID, Expires: now.Add(time.Minute), Generation: 1, TargetUID: t.uid,
		}}
		claim, err := json.Marshal(map[string]any{"metadata": map[string]any{"resourceVersion": t.resourceVersion}, "status": status})
		if err != nil {
			return err
		}
		if _, err := managers.Patch(ctx, t.name, types.MergePatchType, claim, metav1.PatchOptions{}, "status"); err != nil {
			return fmt.Errorf("claim %s: %w", t.name, err)
		}
		if err := kube.CoreV1().Namespaces().Delete(ctx, t.name, metav1.DeleteOptions{
			Preconditions: &metav1.Preconditions{UID: &t.uid}, PropagationPolicy: &background,
		}); err != nil {
			return fmt.Errorf("delete namespace %s: %w", t.name, err)
		}
		if which == claimDeleteDeactivate {
			if _, err := managers.Patch(ctx, t.name, types.MergePatchType, []byte(`{"spec":{"deactivated":true}}`), metav1.PatchOptions{}); err != nil {
				return fmt.Errorf("deactivate %s: %w", t.name, err)
			}
		}
		return nil
	})
}

// parallel runs do(0…n-1) on floorConcurrency workers; the first error
// stops it.
func parallel(ctx context.Context, n int, do func(context.Context, int) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	jobs := make(chan int)
	var (
		wg    sync.WaitGroup
		once  sync.Once
		first error
	)
	for range floorConcurrency {
		wg.Go(func() {
			for i := range jobs {
				if err := do(ctx, i); err != nil {
					once.Do(func() { first = err; cancel() })
				}
			}
		})
	}
feed:
	for i := range n {
		select {
		case jobs <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(jobs)
	wg.Wait()
	return first
}

// sweepRun is one run of the nsman binary.
type sweepRun struct {
	Wall    time.Duration
	MaxRSS  int64
	Code    int
	Summary sweep.Summary
	Stderr  string
}

// runSweep runs `nsman sweep -o json --kubeconfig kubeconfig args...` as a
// child process and reads its wall time, peak RSS and report summary.
// command is nsman's binary, possibly after env and variables to set: env
// execs nsman in its own process, so the figures are still nsman's.
func runSweep(ctx context.Context, command []string, kubeconfig string, args ...string) (sweepRun, error) {
	all := append(slices.Concat(command, []string{"sweep", "-o", "json", "--kubeconfig", kubeconfig}), args...)
	var stdout, stderr bytes.Buffer
	res, err := launchAndWait(ctx, &stdout, all, &stderr)
	run := sweepRun{Wall: res.Wall, MaxRSS: res.MaxRSS, Code: res.Code, Stderr: stderr.String()}
	if err != nil {
		return run, fmt.Errorf("nsman %s: %w; stderr:\n%s", strings.Join(all[1:], " "), err, tail(run.Stderr, 2000))
	}
	var report struct {
		Summary sweep.Summary `json:"summary"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &report); err != nil {
		return run, fmt.Errorf("nsman %s: exit %d, report not JSON (%v); stderr:\n%s", strings.Join(all[1:], " "), run.Code, err, tail(run.Stderr, 2000))
	}
	run.Summary = report.Summary
	return run, nil
}

// launchAndWait runs command through the launcher (see launchEnv), its
// output to stdout and stderr (discarded when nil).
func launchAndWait(ctx context.Context, stdout io.Writer, command []string, stderr ...io.Writer) (launched, error) {
	out := filepath.Join(os.TempDir(), fmt.Sprintf("nsman-bench-launch-%d-%d.json", os.Getpid(), launches.Add(1)))
	defer os.Remove(out)
	self, err := os.Executable()
	if err != nil {
		return launched{}, err
	}
	cmd := exec.CommandContext(ctx, self, command...)
	cmd.Env = append(os.Environ(), launchEnv+"="+out)
	cmd.Stdout = stdout
	if len(stderr) > 0 {
		cmd.Stderr = stderr[0]
	}
	if err := cmd.Run(); err != nil {
		return launched{}, fmt.Errorf("launcher: %w", err)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		return launched{}, fmt.Errorf("launcher result: %w", err)
	}
	var res launched
	err = json.Unmarshal(data, &res)
	return res, err
}

// launches numbers the launcher's result files.
var launches atomic.Int64

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}

// describe renders counts as "k v, k v" in key order.
func describe[V any](m map[string]V) string {
	parts := make([]string, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s %v", k, m[k]))
	}
	return strings.Join(parts, ", ")
}
