package sweep

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	clienttesting "k8s.io/client-go/testing"

	"github.com/nsman/nsman/internal/status"
	"github.com/nsman/nsman/report"
	"github.com/nsman/nsman/webhook"
)

var deploymentsGVR = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}

// rule is a rule in namespace platform over the namespaces named e2e-*.
func rule(name string, policies ...any) *unstructured.Unstructured {
	return manager("platform", name, map[string]any{"namePatterns": []any{"e2e-*"}, "policies": policies})
}

// TestRunRules: a rule deletes the namespaces it matches once their TTL
// has passed, waits on the others, leaves a namespace governed by its own
// manager, a protected one and one that does not match alone, and sums it
// all up in its status; a rule outside a trusted namespace is forbidden.
func TestRunRules(t *testing.T) {
	f := newFakeAPI(t, true,
		namespace("platform", 48*time.Hour, nil, nil), rule("e2e-leftovers", ttl(3600, "DELETE", nil)),
		namespace("team-a", 48*time.Hour, nil, nil), manager("team-a", "rogue", map[string]any{"namePatterns": []any{"e2e-*"}, "policies": []any{ttl(1, "DELETE", nil)}}),
		namespace("e2e-old", 2*time.Hour, nil, nil), namespace("e2e-older", 3*time.Hour, nil, nil), namespace("e2e-new", 10*time.Minute, nil, nil),
		namespace("e2e-governed", 2*time.Hour, nil, nil), manager("e2e-governed", "e2e-governed", map[string]any{"policies": []any{ttl(86400, "DELETE", nil)}}),
		namespace("e2e-protected", 2*time.Hour, nil, nil), namespace("other", 2*time.Hour, nil, nil),
	)
	rep, err := sweepOf(t, f, Config{TrustedNamespaces: []string{"platform"}, ProtectedNamespaces: []string{"e2e-protected"}, SkipReclaim: true}, nil).Run(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for target, want := range map[string]report.State{"e2e-old": report.StateFired, "e2e-older": report.StateFired, "e2e-new": report.StateWaiting, "e2e-governed": report.StateGoverned} {
		if e := entryOf(t, rep, "platform", "e2e-leftovers", target); e.State != want || !e.Rule {
			t.Errorf("%s: %s (%s), want %s", target, e.State, e.Message, want)
		}
	}
	for _, e := range rep.Entries {
		if e.Name == "e2e-leftovers" && (e.Target == "e2e-protected" || e.Target == "other") {
			t.Errorf("the rule reached %s: %+v", e.Target, e)
		}
	}
	if e := entryOf(t, rep, "team-a", "rogue", ""); e.State != report.StateForbidden {
		t.Errorf("rule outside a trusted namespace: %s (%s), want forbidden", e.State, e.Message)
	}
	if got := f.actions("delete", "namespaces"); !slices.Equal(slices.Sorted(slices.Values(got)), []string{"/e2e-old", "/e2e-older"}) {
		t.Errorf("deleted %v, want e2e-old and e2e-older", got)
	}
	st := f.get(t, managersGVR, "platform", "e2e-leftovers").Object["status"]
	var got status.Status
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(st.(map[string]any), &got); err != nil {
		t.Fatal(err)
	}
	if got.Rule == nil || got.Rule.Matched != 4 || got.Rule.States[report.StateFired] != 2 || len(got.Rule.Latest) != 2 {
		t.Errorf("rule status %+v, want 4 matched, 2 fired and listed", got.Rule)
	}
	if !strings.Contains(got.Message, "matches 4 namespace(s): 2 fired, 1 governed, 1 waiting") {
		t.Errorf("rule message %q", got.Message)
	}
}

// TestRunDryRun: a dry run reports what it would do and writes nothing,
// at --at when given.
func TestRunDryRun(t *testing.T) {
	objs := func() []runtime.Object {
		return []runtime.Object{
			namespace("team-due", 2*time.Hour, nil, nil), manager("team-due", "team-due", map[string]any{"policies": []any{ttl(3600, "DELETE", nil)}}),
			namespace("team-later", 2*time.Hour, nil, nil), manager("team-later", "team-later", map[string]any{"policies": []any{ttl(3*3600, "DELETE", nil)}}),
			namespace("platform", 48*time.Hour, nil, nil), rule("e2e-leftovers", ttl(3600, "DELETE", nil)),
			namespace("e2e-old", 2*time.Hour, nil, nil),
		}
	}
	f := newFakeAPI(t, true, objs()...)
	rep, err := sweepOf(t, f, Config{DryRun: true, TrustedNamespaces: []string{"platform"}}, nil).Run(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if n := f.writes(); n != 0 {
		t.Errorf("a dry run wrote %d times: %v", n, f.dyn.Actions())
	}
	if !rep.Summary.DryRun || rep.Summary.States[report.StatePlanned] != 2 || rep.Summary.States[report.StateWaiting] != 1 {
		t.Errorf("dry run: %+v, want 2 planned and 1 waiting", rep.Summary.States)
	}
	// An hour on, the one not due yet is due too.
	f = newFakeAPI(t, true, objs()...)
	rep, err = sweepOf(t, f, Config{DryRun: true, At: sweepAt.Add(2 * time.Hour), TrustedNamespaces: []string{"platform"}}, nil).Run(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if e := entryOf(t, rep, "team-later", "team-later", ""); e.State != report.StatePlanned || !rep.Summary.Now.Equal(sweepAt.Add(2*time.Hour)) {
		t.Errorf("--at 2h later: %s (%s) at %s, want planned", e.State, e.Message, rep.Summary.Now)
	}
	if n := f.writes(); n != 0 {
		t.Errorf("a dry run at --at wrote %d times", n)
	}
}

// TestRunBadManagers: an invalid manager, and one whose DELETE the API
// server refuses, are reported; the sweep goes on with the others.
func TestRunBadManagers(t *testing.T) {
	f := newFakeAPI(t, true,
		namespace("team-broken", 2*time.Hour, nil, nil), manager("team-broken", "team-broken", map[string]any{"policies": []any{map[string]any{"name": "no condition"}}}),
		namespace("team-refused", 2*time.Hour, nil, nil), manager("team-refused", "team-refused", map[string]any{"policies": []any{ttl(60, "DELETE", nil)}}),
		namespace("team-due", 2*time.Hour, nil, nil), manager("team-due", "team-due", map[string]any{"policies": []any{ttl(60, "DELETE", nil)}}),
		namespace("ops", 2*time.Hour, nil, nil), manager("ops", "team-gone", map[string]any{"namespace": "team-gone", "policies": []any{ttl(60, "DELETE", nil)}}),
	)
	f.dyn.PrependReactor("delete", "namespaces", func(a clienttesting.Action) (bool, runtime.Object, error) {
		if a.(clienttesting.DeleteAction).GetName() == "team-refused" {
			return true, nil, errors.New("etcd is on fire")
		}
		return false, nil, nil
	})
	rep, err := sweepOf(t, f, Config{TrustedNamespaces: []string{"ops"}, SkipReclaim: true}, nil).Run(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]report.State{"team-broken": report.StateInvalid, "team-refused": report.StateFailed, "team-due": report.StateFired, "team-gone": report.StateTargetMissing} {
		ns := name
		if name == "team-gone" {
			ns = "ops"
		}
		if e := entryOf(t, rep, ns, name, ""); e.State != want {
			t.Errorf("%s: %s (%s), want %s", name, e.State, e.Message, want)
		}
	}
	if !f.gone("team-due") || f.gone("team-refused") || f.gone("team-broken") {
		t.Error("the wrong namespaces are gone")
	}
}

// TestRunNotInstalled: without NamespaceManagers served, the sweep says so
// and reports nothing; a list that fails is an error.
func TestRunNotInstalled(t *testing.T) {
	f := newFakeAPI(t, true)
	delete(f.discovery, "/apis/"+managersGVR.GroupVersion().String())
	if _, err := sweepOf(t, f, Config{}, nil).Run(t.Context()); !errors.Is(err, ErrNotInstalled) {
		t.Errorf("no CRD: %v, want ErrNotInstalled", err)
	}
	f = newFakeAPI(t, true)
	f.dyn.PrependReactor("list", managersGVR.Resource, func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("etcd is on fire")
	})
	if _, err := sweepOf(t, f, Config{}, nil).Run(t.Context()); err == nil || !strings.Contains(err.Error(), "list NamespaceManagers") {
		t.Errorf("listing fails: %v", err)
	}
}

// TestRunShards: two shards split the managers between them, each handled
// by one, and together do what one sweep does.
func TestRunShards(t *testing.T) {
	objs := func() []runtime.Object {
		var out []runtime.Object
		for i := range 8 {
			name := fmt.Sprintf("team-%d", i)
			m := manager(name, name, map[string]any{"policies": []any{ttl(60, "DELETE", nil)}})
			// UIDs differ as the API server's do: by more than a digit
			// twice over, which FNV's last bit would not tell apart.
			m.SetUID(types.UID(fmt.Sprintf("%08x-0000-4000-8000-000000000000", i*0x9e3779b1)))
			out = append(out, namespace(name, 2*time.Hour, nil, nil), m)
		}
		return out
	}
	handled := map[string]int{}
	for shard := range 2 {
		f := newFakeAPI(t, true, objs()...)
		rep, err := sweepOf(t, f, Config{ShardIndex: shard, ShardCount: 2, SkipReclaim: true}, nil).Run(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if rep.Summary.Shard == nil || rep.Summary.Shard.Skipped+len(rep.Entries) != 8 || len(rep.Entries) == 0 {
			t.Errorf("shard %d: %d entries, summary %+v", shard, len(rep.Entries), rep.Summary.Shard)
		}
		for _, e := range rep.Entries {
			handled[e.Name]++
			if e.State != report.StateFired || f.gone(e.Target) != true {
				t.Errorf("shard %d: %s %s", shard, e.Name, e.State)
			}
		}
		if len(f.actions("delete", "namespaces")) != len(rep.Entries) {
			t.Errorf("shard %d deleted %v for %d entries", shard, f.actions("delete", "namespaces"), len(rep.Entries))
		}
	}
	for i := range 8 {
		if n := handled[fmt.Sprintf("team-%d", i)]; n != 1 {
			t.Errorf("team-%d handled by %d shards", i, n)
		}
	}
}

// TestRunMaxActions: --max-actions caps the actions of a sweep, managers'
// and rules' together; the rest are deferred.
func TestRunMaxActions(t *testing.T) {
	var objs []runtime.Object
	for i := range 3 {
		name := fmt.Sprintf("team-%d", i)
		objs = append(objs, namespace(name, 2*time.Hour, nil, nil), manager(name, name, map[string]any{"policies": []any{ttl(60, "DELETE", nil)}}))
		objs = append(objs, namespace(fmt.Sprintf("e2e-%d", i), 2*time.Hour, nil, nil))
	}
	objs = append(objs, namespace("platform", 48*time.Hour, nil, nil), rule("e2e-leftovers", ttl(60, "DELETE", nil)))
	f := newFakeAPI(t, true, objs...)
	rep, err := sweepOf(t, f, Config{MaxActions: 2, TrustedNamespaces: []string{"platform"}, SkipReclaim: true}, nil).Run(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if fired, deferred := rep.Summary.States[report.StateFired], rep.Summary.States[report.StateDeferred]; fired != 2 || deferred != 4 {
		t.Errorf("%d fired, %d deferred, want 2 and 4: %+v", fired, deferred, rep.Entries)
	}
	if got := f.actions("delete", "namespaces"); len(got) != 2 {
		t.Errorf("deleted %v, want 2", got)
	}
}

// TestRunTrustAndProtection: a manager targets its own namespace unless it
// lives in a trusted one; none targets a protected namespace.
func TestRunTrustAndProtection(t *testing.T) {
	f := newFakeAPI(t, true,
		namespace("ops", 48*time.Hour, nil, nil), namespace("team-a", 2*time.Hour, nil, nil), namespace("team-b", 2*time.Hour, nil, nil),
		manager("ops", "b-expiry", map[string]any{"namespace": "team-b", "policies": []any{ttl(60, "DELETE", nil)}}),
		manager("ops", "system", map[string]any{"namespace": "kube-system", "policies": []any{ttl(60, "DELETE", nil)}}),
		manager("team-a", "grab", map[string]any{"namespace": "team-b", "policies": []any{ttl(60, "DELETE", nil)}}),
		namespace("kube-system", 480*time.Hour, nil, nil),
	)
	rep, err := sweepOf(t, f, Config{TrustedNamespaces: []string{"ops", "missing"}, SkipReclaim: true}, nil).Run(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if e := entryOf(t, rep, "ops", "b-expiry", ""); e.State != report.StateFired || e.Target != "team-b" {
		t.Errorf("trusted: %s on %s (%s), want fired on team-b", e.State, e.Target, e.Message)
	}
	for _, name := range []string{"system", "grab"} {
		ns := map[string]string{"system": "ops", "grab": "team-a"}[name]
		if e := entryOf(t, rep, ns, name, ""); e.State != report.StateForbidden {
			t.Errorf("%s: %s (%s), want forbidden", name, e.State, e.Message)
		}
	}
	if got := f.actions("delete", "namespaces"); !slices.Equal(got, []string{"/team-b"}) {
		t.Errorf("deleted %v, want team-b alone", got)
	}
	if !slices.Equal(rep.Summary.MissingTrusted, []string{"missing"}) {
		t.Errorf("missing trusted namespaces %v", rep.Summary.MissingTrusted)
	}
}

// TestRunHolds: a namespace held until later is not acted on, and its
// entry says until when; a hold past --max-hold is ignored.
func TestRunHolds(t *testing.T) {
	until := sweepAt.Add(3 * time.Hour)
	f := newFakeAPI(t, true,
		namespace("team-held", 2*time.Hour, nil, map[string]string{status.HoldAnnotation: until.Format(time.RFC3339)}),
		manager("team-held", "team-held", map[string]any{"policies": []any{ttl(60, "DELETE", nil)}}),
		namespace("team-too-long", 2*time.Hour, nil, map[string]string{status.HoldAnnotation: sweepAt.Add(400 * 24 * time.Hour).Format(time.RFC3339)}),
		manager("team-too-long", "team-too-long", map[string]any{"policies": []any{ttl(60, "DELETE", nil)}}),
		namespace("platform", 48*time.Hour, nil, nil), rule("e2e-leftovers", ttl(60, "DELETE", nil)),
		namespace("e2e-held", 2*time.Hour, nil, map[string]string{status.HoldAnnotation: until.Format(time.RFC3339)}),
	)
	rep, err := sweepOf(t, f, Config{TrustedNamespaces: []string{"platform"}, SkipReclaim: true}, nil).Run(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range []report.Entry{entryOf(t, rep, "team-held", "team-held", ""), entryOf(t, rep, "platform", "e2e-leftovers", "e2e-held")} {
		if e.State != report.StateWaiting || e.Due == nil || !e.Due.Equal(until) {
			t.Errorf("%s held: %s due %v (%s), want waiting until %s", e.Target, e.State, e.Due, e.Message, until)
		}
	}
	if e := entryOf(t, rep, "team-too-long", "team-too-long", ""); e.State != report.StateFired || e.HoldIgnored == "" {
		t.Errorf("held too long: %s, ignored %q (%s), want fired and the hold ignored", e.State, e.HoldIgnored, e.Message)
	}
	if f.gone("team-held") || f.gone("e2e-held") || !f.gone("team-too-long") {
		t.Error("a held namespace was deleted, or the one held too long was not")
	}
}

// TestRunWebhook: a WEBHOOK goes through the hook queue to its receiver,
// once, and the manager records it fired; a dry run delivers nothing.
func TestRunWebhook(t *testing.T) {
	var (
		mu     sync.Mutex
		bodies []map[string]any
	)
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body map[string]any
		data, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(data, &body)
		mu.Lock()
		bodies = append(bodies, body)
		mu.Unlock()
	}))
	defer receiver.Close()
	objs := func() []runtime.Object {
		return []runtime.Object{namespace("team-hook", 2*time.Hour, nil, nil),
			manager("team-hook", "team-hook", map[string]any{"policies": []any{ttl(60, "WEBHOOK", map[string]any{"url": receiver.URL + "/hook"})}})}
	}
	allow, err := webhook.ParseAllowList([]string{"127.0.0.1/32"})
	if err != nil {
		t.Fatal(err)
	}
	sender := webhook.NewSender(webhook.Options{MaxAttempts: 1, Timeout: 5 * time.Second, Allow: allow})
	f := newFakeAPI(t, true, objs()...)
	rep, err := sweepOf(t, f, Config{}, sender).Run(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if e := entryOf(t, rep, "team-hook", "team-hook", ""); e.State != report.StateFired || e.Action != "WEBHOOK" {
		t.Errorf("webhook: %s %s (%s), want fired", e.State, e.Action, e.Message)
	}
	mu.Lock()
	if len(bodies) != 1 || bodies[0]["namespace"] != "team-hook" {
		t.Errorf("receiver got %v, want one request about team-hook", bodies)
	}
	mu.Unlock()
	if f.gone("team-hook") {
		t.Error("a WEBHOOK deleted its namespace")
	}

	f = newFakeAPI(t, true, objs()...)
	if rep, err = sweepOf(t, f, Config{DryRun: true}, sender).Run(t.Context()); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if e := entryOf(t, rep, "team-hook", "team-hook", ""); e.State != report.StatePlanned || len(bodies) != 1 {
		t.Errorf("dry run: %s, %d deliveries in all; want planned and none more", e.State, len(bodies))
	}
}

// TestRunScaleDownAndSleep: SCALE_DOWN scales the Deployments it selects
// to zero; SLEEP puts every Deployment of its namespace to sleep, keeping
// what to wake it to, and its manager is asleep.
func TestRunScaleDownAndSleep(t *testing.T) {
	f := newFakeAPI(t, true,
		namespace("team-scale", 2*time.Hour, nil, nil),
		manager("team-scale", "team-scale", map[string]any{"policies": []any{ttl(60, "SCALE_DOWN", map[string]any{"selectors": []any{map[string]any{"kind": "Deployment", "labels": map[string]any{"scale-down": "true"}}}})}}),
		deployment("team-scale", "web", 3, map[string]string{"scale-down": "true"}), deployment("team-scale", "db", 2, nil),
		namespace("team-sleep", 2*time.Hour, nil, nil),
		manager("team-sleep", "team-sleep", map[string]any{"policies": []any{ttl(60, "SLEEP", nil)}}),
		deployment("team-sleep", "web", 2, nil), deployment("team-sleep", "worker", 1, nil),
	)
	rep, err := sweepOf(t, f, Config{SkipReclaim: true}, nil).Run(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if e := entryOf(t, rep, "team-scale", "team-scale", ""); e.State != report.StateFired || e.Action != "SCALE_DOWN" {
		t.Errorf("scale down: %s %s (%s)", e.State, e.Action, e.Message)
	}
	if e := entryOf(t, rep, "team-sleep", "team-sleep", ""); e.State != report.StateFired || e.Action != "SLEEP" ||
		!slices.Equal(e.Effects, []string{"scale Deployment/web from 2 to 0", "scale Deployment/worker from 1 to 0"}) {
		t.Errorf("sleep: %s %s (%s), effects %q", e.State, e.Action, e.Message, e.Effects)
	}
	replicas := func(namespace, name string) int64 {
		n, _, _ := unstructured.NestedInt64(f.get(t, deploymentsGVR, namespace, name).Object, "spec", "replicas")
		return n
	}
	for _, d := range []struct {
		namespace, name string
		want            int64
	}{{"team-scale", "web", 0}, {"team-scale", "db", 2}, {"team-sleep", "web", 0}, {"team-sleep", "worker", 0}} {
		if got := replicas(d.namespace, d.name); got != d.want {
			t.Errorf("%s/%s: %d replicas, want %d", d.namespace, d.name, got, d.want)
		}
	}
	if got := f.actions("patch", "deployments"); !slices.Equal(slices.Sorted(slices.Values(got)), []string{"team-scale/web", "team-sleep/web", "team-sleep/worker"}) {
		t.Errorf("patched %v", got)
	}
	// Each workload keeps what it is woken to; the manager, since when its
	// namespace sleeps.
	for name, want := range map[string]string{"web": "2", "worker": "1"} {
		if got := f.get(t, deploymentsGVR, "team-sleep", name).GetAnnotations()[status.ReplicasAnnotation]; got != want {
			t.Errorf("team-sleep/%s keeps %q to wake to, want %s", name, got, want)
		}
	}
	if since, _, _ := unstructured.NestedString(f.get(t, managersGVR, "team-sleep", "team-sleep").Object, "status", "asleep", "since"); since != sweepAt.Format(time.RFC3339) {
		t.Errorf("the manager's status says its namespace sleeps since %q", since)
	}
}

// TestRunWebhookQueued: a WEBHOOK waits for its receiver in the hook
// queue, not in the worker that evaluated it: a receiver that answers only
// once the DELETE of the manager listed after it is done holds up nothing.
func TestRunWebhookQueued(t *testing.T) {
	deleted := make(chan struct{})
	var once sync.Once
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		select {
		case <-deleted:
		case <-time.After(3 * time.Second):
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	defer receiver.Close()
	allow, err := webhook.ParseAllowList([]string{"127.0.0.1/32"})
	if err != nil {
		t.Fatal(err)
	}
	f := newFakeAPI(t, true,
		namespace("team-a", 2*time.Hour, nil, nil), manager("team-a", "team-a", map[string]any{"policies": []any{ttl(60, "WEBHOOK", map[string]any{"url": receiver.URL})}}),
		namespace("team-b", 2*time.Hour, nil, nil), manager("team-b", "team-b", map[string]any{"policies": []any{ttl(60, "DELETE", nil)}}))
	f.dyn.PrependReactor("delete", "namespaces", func(clienttesting.Action) (bool, runtime.Object, error) {
		once.Do(func() { close(deleted) })
		return false, nil, nil
	})
	sender := webhook.NewSender(webhook.Options{MaxAttempts: 1, Timeout: 10 * time.Second, Allow: allow})
	rep, err := sweepOf(t, f, Config{Concurrency: 1, SkipReclaim: true}, sender).Run(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"team-a", "team-b"} {
		if e := entryOf(t, rep, name, name, ""); e.State != report.StateFired {
			t.Errorf("%s: %s %s (%s), want fired", name, e.State, e.Action, e.Message)
		}
	}
}
