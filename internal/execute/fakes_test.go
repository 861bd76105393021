package execute

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	kubefake "k8s.io/client-go/kubernetes/fake"
	metadatafake "k8s.io/client-go/metadata/fake"

	"github.com/nsman/nsman/internal/cluster"
	"github.com/nsman/nsman/internal/decide"
	"github.com/nsman/nsman/internal/probe"
	"github.com/nsman/nsman/internal/record"
	"github.com/nsman/nsman/internal/status"
	"github.com/nsman/nsman/internal/write"
	"github.com/nsman/nsman/policy"
	"github.com/nsman/nsman/report"
	"github.com/nsman/nsman/webhook"
)

// sweepNow is the time of the sweeps of the executor's tests.
var sweepNow = time.Date(2026, 11, 28, 8, 0, 0, 0, time.UTC)

// fakeRecord is a record that keeps what it was asked to claim and write,
// and fails either as told: the executor's tests read what it was asked.
type fakeRecord struct {
	prior              status.Prior
	claimErr, writeErr error
	claims             []status.Claim
	writes             []record.Outcome
	sink               fakeSink
}

func (r *fakeRecord) Prior() status.Prior { return r.prior }

func (r *fakeRecord) Claim(_ context.Context, c status.Claim, _ report.Entry, _ bool) error {
	r.claims = append(r.claims, c)
	return r.claimErr
}

func (r *fakeRecord) Write(_ context.Context, o record.Outcome) error {
	r.writes = append(r.writes, o)
	return r.writeErr
}

// Unchanged: the decision rests on the namespace's UID, its hold and when
// it was touched.
func (r *fakeRecord) Unchanged(listed, now cluster.Namespace) bool {
	return listed.UID == now.UID && listed.Hold == now.Hold && listed.Touched == now.Touched
}

func (r *fakeRecord) Sink() record.Sink { return &r.sink }

// told is one thing a sink heard.
type told struct {
	entry           report.Entry
	acted, recorded bool
}

// fakeSink keeps what it was told.
type fakeSink struct {
	mu   sync.Mutex
	told []told
}

func (s *fakeSink) Tell(_ context.Context, e report.Entry, _ status.Prior, acted, recorded bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.told = append(s.told, told{entry: e, acted: acted, recorded: recorded})
}

// deleteCall is one DeleteNamespace a writer was asked for.
type deleteCall struct {
	name            string
	uid             types.UID
	resourceVersion string
}

// fakeWriter writes nothing, as the dry-run writer, keeps the DELETEs and
// deliveries it was asked for, and answers them, and Silent, as told. done
// (when set) is the state of an action done: report.StateFired for the
// API's writer.
type fakeWriter struct {
	write.Writer
	done report.State
	// deleteErrs answer the DELETEs in turn; the last answers the rest.
	deleteErrs []error
	deletes    []deleteCall
	silent     error
	deliverErr error
	// onDeliver, when set, runs in each delivery (to move a test's clock).
	onDeliver func()
	delivered []webhook.Route
	patches   int
	patchErr  error
	// patchErrs answer the patches of a resource (plural), over patchErr.
	patchErrs map[string]error
	patched   []string
	// ownerDeletes are the DeleteOwners asked for, answered by ownerErr.
	ownerDeletes []string
	ownerErr     error
}

func (w *fakeWriter) DeleteOwner(_ context.Context, resource schema.GroupVersionResource, namespace, name string, uid types.UID) error {
	w.ownerDeletes = append(w.ownerDeletes, resource.Resource+"/"+namespace+"/"+name+"@"+string(uid))
	return w.ownerErr
}

func newFakeWriter() *fakeWriter { return &fakeWriter{Writer: dryRun} }

func (w *fakeWriter) Done() report.State {
	if w.done != "" {
		return w.done
	}
	return w.Writer.Done()
}

func (w *fakeWriter) DeleteNamespace(_ context.Context, name string, uid types.UID, resourceVersion string) error {
	w.deletes = append(w.deletes, deleteCall{name, uid, resourceVersion})
	if len(w.deleteErrs) == 0 {
		return nil
	}
	return w.deleteErrs[min(len(w.deletes), len(w.deleteErrs))-1]
}

func (w *fakeWriter) Silent(string, string) error { return w.silent }

func (w *fakeWriter) Deliver(_ context.Context, route webhook.Route, _ string, _ []byte, _ string) (webhook.Delivery, error) {
	w.delivered = append(w.delivered, route)
	if w.onDeliver != nil {
		w.onDeliver()
	}
	return webhook.Delivery{}, w.deliverErr
}

func (w *fakeWriter) PatchWorkload(_ context.Context, resource schema.GroupVersionResource, _, name string, _ []byte) error {
	w.patches++
	w.patched = append(w.patched, resource.Resource+"/"+name)
	if err, ok := w.patchErrs[resource.Resource]; ok {
		return err
	}
	return w.patchErr
}

// newExecutor is the executor of a sweep at sweepNow that writes through w
// and reads through reads, with --claim-ttl 1m, no --max-actions and
// --reclaim=false.
func newExecutor(t *testing.T, w write.Writer, reads cluster.Reader) *Executor {
	t.Helper()
	return &Executor{Writer: w, Reads: reads, Log: slog.New(slog.DiscardHandler), Now: sweepNow, Clock: func() time.Time { return sweepNow },
		Stop: t.Context(), SweepID: "sweep-1", Version: "test", ClaimTTL: time.Minute, SkipReclaim: true, Kinds: &probe.Kinds{}}
}

// listedTeamA is namespace team-a as the sweep listed it.
var listedTeamA = cluster.Namespace{Name: "team-a", UID: "ns-uid", ResourceVersion: "7"}

// decision is manager team-a/m's decision to act by its policy "expire",
// a final DELETE of its own namespace, changed by mods.
func decision(mods ...func(*decide.Decision)) decide.Decision {
	d := decide.Decision{
		Manager: policy.Manager{Namespace: "team-a", Name: "m", UID: "m-uid", Generation: 3, TargetNamespace: "team-a"},
		Entry:   report.Entry{Namespace: "team-a", Name: "m", Target: "team-a", State: report.StateWaiting, Policy: "expire", Action: policy.ActionDelete},
		Plan: &decide.Plan{Step: decide.StepAct, Generation: 3, Reason: "expired",
			Policy: policy.Policy{Name: "expire", Action: policy.Action{Type: policy.ActionDelete}, Final: true},
			Target: decide.Target{Name: "team-a", UID: "ns-uid", Listed: listedTeamA, Home: true}},
	}
	for _, mod := range mods {
		mod(&d)
	}
	return d
}

// Mutators of a decision.

func untouched(d *decide.Decision) { d.Untouched, d.Plan = true, nil }
func noPlan(d *decide.Decision)    { d.Plan = nil }
func granted(d *decide.Decision)   { d.Granted = true }
func notHome(d *decide.Decision)   { d.Plan.Target.Home = false }

func step(s decide.Step) func(*decide.Decision) {
	return func(d *decide.Decision) { d.Plan.Step = s }
}

// webhookTo makes the policy a WEBHOOK to url.
func webhookTo(url string) func(*decide.Decision) {
	return func(d *decide.Decision) {
		d.Plan.Policy.Action = policy.Action{Type: policy.ActionWebhook, URL: url}
		d.Entry.Action = policy.ActionWebhook
	}
}

// scaleDownAll makes the policy a SCALE_DOWN of every Deployment and
// StatefulSet.
func scaleDownAll(d *decide.Decision) {
	d.Plan.Policy.Action = policy.Action{Type: policy.ActionScaleDown}
	d.Entry.Action = policy.ActionScaleDown
}

// sleeping makes the policy "nights", a SLEEP of the target's Deployments
// that wakes it when wake.
func sleeping(wake bool) func(*decide.Decision) {
	return func(d *decide.Decision) {
		d.Plan.Policy = policy.Policy{Name: "nights", Action: policy.Action{Type: policy.ActionSleep, Selectors: []policy.Selector{{Kind: policy.KindDeployment}}}}
		d.Plan.Wake = wake
		d.Entry.Policy, d.Entry.Action = "nights", policy.ActionSleep
	}
}

// rule makes the manager a rule, whose records are the platform's.
func rule(d *decide.Decision) { d.Manager.Rule = &policy.Rule{} }

// readerOf reads a cluster of namespaces nss (metadata) and of objs (typed).
func readerOf(t *testing.T, nss []*metav1.PartialObjectMetadata, objs ...runtime.Object) cluster.Reader {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := metav1.AddMetaToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	var meta []runtime.Object
	for _, ns := range nss {
		ns.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"}
		meta = append(meta, ns)
	}
	return cluster.Reader{Clients: cluster.Clients{Metadata: metadatafake.NewSimpleMetadataClient(scheme, meta...), Kube: kubefake.NewClientset(objs...)},
		Log: slog.New(slog.DiscardHandler)}
}

// emptyReader reads a cluster with no namespace.
func emptyReader(t *testing.T) cluster.Reader { return readerOf(t, nil) }

// namespaceMeta is namespace name with uid, as listed.
func namespaceMeta(name string, uid types.UID) *metav1.PartialObjectMetadata {
	return &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: name, UID: uid, ResourceVersion: "8"}}
}

// deploymentKind is the known kind Deployment.
var deploymentKind, _ = probe.KnownKind(policy.KindDeployment)
