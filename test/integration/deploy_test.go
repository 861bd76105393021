package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/nsman/nsman/internal/owner"
	"github.com/nsman/nsman/test/nsmantest"
	"github.com/nsman/nsman/webhook"
)

// The Secret the webhook-signing overlay mounts, and where nsman reads it.
const (
	signingKeySecret = "nsman-webhook-signing-key"
	signingKeyDir    = "/etc/nsman/webhook"
	signingKeyFlag   = "--webhook-signing-key-file=" + signingKeyDir + "/key"
)

var cronJobResource = batchv1.SchemeGroupVersion.WithResource("cronjobs")

// TestCronJobIsAdmittedUnderRestrictedPodSecurity checks deploy/base/cronjob.yaml
// as shipped: the schedule and limits the sweeper relies on, its acceptance
// by the API server, and that its pods run in a namespace that enforces Pod
// Security "restricted".
func TestCronJobIsAdmittedUnderRestrictedPodSecurity(t *testing.T) {
	setup(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	manifest, err := os.ReadFile(filepath.Join(nsmantest.RepoRoot(), "deploy", "base", "cronjob.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	objs, err := nsmantest.Decode(manifest)
	if err != nil {
		t.Fatalf("deploy/base/cronjob.yaml: %v", err)
	}
	if len(objs) != 1 {
		t.Fatalf("deploy/base/cronjob.yaml holds %d objects, want the CronJob alone", len(objs))
	}
	obj := objs[0]
	cj := typedCronJob(t, obj)

	if cj.Namespace != nsmantest.ServiceAccountNamespace || cj.Name != "nsman" {
		t.Errorf("CronJob %s/%s, want %s/nsman", cj.Namespace, cj.Name, nsmantest.ServiceAccountNamespace)
	}
	if cj.Spec.Schedule != "* * * * *" {
		t.Errorf("schedule %q, want every minute", cj.Spec.Schedule)
	}
	if cj.Spec.ConcurrencyPolicy != batchv1.ForbidConcurrent {
		t.Errorf("concurrencyPolicy %q, want Forbid", cj.Spec.ConcurrencyPolicy)
	}
	// Under a minute: a missed run is skipped, not run late beside the next.
	if d := cj.Spec.StartingDeadlineSeconds; d == nil || *d <= 0 || *d >= 60 {
		t.Errorf("startingDeadlineSeconds %v, want set, below the schedule's minute", ptrString(d))
	}
	if cj.Spec.SuccessfulJobsHistoryLimit == nil || cj.Spec.FailedJobsHistoryLimit == nil {
		t.Errorf("history limits successful %v, failed %v: want both set",
			ptrString(cj.Spec.SuccessfulJobsHistoryLimit), ptrString(cj.Spec.FailedJobsHistoryLimit))
	}
	job := cj.Spec.JobTemplate.Spec
	if d := job.ActiveDeadlineSeconds; d == nil || *d <= 0 {
		t.Errorf("activeDeadlineSeconds %v, want a positive deadline", ptrString(d))
	}
	if b := job.BackoffLimit; b == nil || *b > 1 {
		t.Errorf("backoffLimit %v, want 0 or 1: the next sweep is the retry", ptrString(b))
	}
	if job.TTLSecondsAfterFinished == nil {
		t.Error("ttlSecondsAfterFinished unset")
	}
	pod := job.Template.Spec
	if pod.RestartPolicy != corev1.RestartPolicyNever {
		t.Errorf("restartPolicy %q, want Never", pod.RestartPolicy)
	}
	if pod.ServiceAccountName != nsmantest.ServiceAccountName {
		t.Errorf("serviceAccountName %q, want %s (deploy/base/rbac.yaml)", pod.ServiceAccountName, nsmantest.ServiceAccountName)
	}
	if !ptr.Deref(pod.AutomountServiceAccountToken, false) {
		t.Error("automountServiceAccountToken not true: nsman needs the token")
	}
	c := nsmanContainer(t, cj)
	if len(c.Args) == 0 || c.Args[0] != "sweep" || !slices.Contains(c.Args, "--log-format=json") {
		t.Errorf("args %q, want sweep with --log-format=json", c.Args)
	}
	if !slices.ContainsFunc(c.Env, func(e corev1.EnvVar) bool {
		return e.Name == "POD_NAMESPACE" && e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.namespace"
	}) {
		t.Errorf("env %v, want POD_NAMESPACE from metadata.namespace", c.Env)
	}
	for _, list := range []corev1.ResourceList{c.Resources.Requests, c.Resources.Limits} {
		for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			if q, ok := list[name]; !ok || q.IsZero() {
				t.Errorf("resources %+v: want requests and limits of cpu and memory", c.Resources)
			}
		}
	}
	// Not part of "restricted", but promised all the same.
	if c.SecurityContext == nil || !ptr.Deref(c.SecurityContext.ReadOnlyRootFilesystem, false) {
		t.Error("readOnlyRootFilesystem not true")
	}

	// The API server accepts the CronJob where it is deployed.
	if _, err := createCronJobDryRun(ctx, obj, obj.GetNamespace()); err != nil {
		t.Fatalf("CronJob rejected: %v", err)
	}

	ns := restrictedNamespace(t)
	warned, err := createCronJobDryRun(ctx, obj, ns)
	if err != nil {
		t.Fatalf("CronJob rejected in a restricted namespace: %v", err)
	}
	if len(warned) > 0 {
		t.Errorf("CronJob in a restricted namespace drew warnings: %q", warned)
	}
	if err := createPodDryRun(ctx, ns, podFrom(cj)); err != nil {
		t.Fatalf("pod of the CronJob rejected under Pod Security restricted: %v", err)
	}

	// Each setting restricted asks for is needed: without it the pod is
	// refused, so the check above can fail.
	for _, tc := range []struct {
		name      string
		mutate    func(*corev1.Pod)
		violation string
	}{
		{"allowPrivilegeEscalation unset", func(p *corev1.Pod) {
			p.Spec.Containers[0].SecurityContext.AllowPrivilegeEscalation = nil
		}, "allowPrivilegeEscalation"},
		{"allowPrivilegeEscalation true", func(p *corev1.Pod) {
			p.Spec.Containers[0].SecurityContext.AllowPrivilegeEscalation = ptr.To(true)
		}, "allowPrivilegeEscalation"},
		{"runAsNonRoot unset", func(p *corev1.Pod) {
			p.Spec.SecurityContext.RunAsNonRoot = nil
		}, "runAsNonRoot"},
		{"capabilities not dropped", func(p *corev1.Pod) {
			p.Spec.Containers[0].SecurityContext.Capabilities = nil
		}, "capabilities"},
		{"no seccomp profile", func(p *corev1.Pod) {
			p.Spec.SecurityContext.SeccompProfile = nil
		}, "seccompProfile"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := podFrom(cj)
			tc.mutate(p)
			err := createPodDryRun(ctx, ns, p)
			if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "PodSecurity") || !strings.Contains(err.Error(), tc.violation) {
				t.Fatalf("pod with %s: got %v, want it forbidden by PodSecurity for %s", tc.name, err, tc.violation)
			}
		})
	}
}

// TestOverlaysRenderAndAreAdmitted renders deploy/ and each overlay with
// kubectl kustomize, as an operator would, and checks what each overlay
// changes, that it changes nothing else, and that its pods still pass Pod
// Security "restricted".
func TestOverlaysRenderAndAreAdmitted(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	base := kustomize(ctx, t, "deploy")
	baseCJ := typedCronJob(t, cronJobObject(t, base))
	baseArgs := nsmanContainer(t, baseCJ).Args
	ns := restrictedNamespace(t)

	for _, tc := range []struct {
		overlay string
		check   func(t *testing.T, cj *batchv1.CronJob)
		// added names the objects the overlay adds to the base's, and
		// checkAdded checks them; each is then admitted like the CronJob.
		added      []string
		checkAdded func(t *testing.T, cj *batchv1.CronJob, objs []*unstructured.Unstructured)
		// patchable is the admission policy's configuredPatchable the
		// overlay sets; "": the base's.
		patchable string
	}{
		{overlay: "dry-run", check: func(t *testing.T, cj *batchv1.CronJob) {
			if args := nsmanContainer(t, cj).Args; !slices.Equal(args, append(slices.Clone(baseArgs), "--dry-run")) {
				t.Errorf("args %q, want the base's %q and --dry-run", args, baseArgs)
			}
		}},
		{overlay: "webhook-signing", check: func(t *testing.T, cj *batchv1.CronJob) {
			c := nsmanContainer(t, cj)
			if !slices.Equal(c.Args, append(slices.Clone(baseArgs), signingKeyFlag)) {
				t.Errorf("args %q, want the base's %q and %s", c.Args, baseArgs, signingKeyFlag)
			}
			vols := cj.Spec.JobTemplate.Spec.Template.Spec.Volumes
			i := slices.IndexFunc(vols, func(v corev1.Volume) bool {
				return v.Secret != nil && v.Secret.SecretName == signingKeySecret
			})
			if i < 0 {
				t.Fatalf("volumes %+v: none of Secret %s", vols, signingKeySecret)
			}
			s := vols[i].Secret
			if !slices.Equal(s.Items, []corev1.KeyToPath{{Key: "key", Path: "key"}}) {
				t.Errorf("Secret volume items %+v, want key at key", s.Items)
			}
			if ptr.Deref(s.Optional, false) {
				t.Error("Secret volume optional: a missing key would send unsigned webhooks")
			}
			if m := ptr.Deref(s.DefaultMode, 0o644); m&0o007 != 0 {
				t.Errorf("key file mode %o readable by others", m)
			}
			if !slices.ContainsFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool {
				return m.Name == vols[i].Name && m.MountPath == signingKeyDir && m.ReadOnly
			}) {
				t.Errorf("mounts %+v: want %s read-only at %s", c.VolumeMounts, vols[i].Name, signingKeyDir)
			}
		}},
		{overlay: "notify", check: func(t *testing.T, cj *batchv1.CronJob) {
			c := nsmanContainer(t, cj)
			if want := append(slices.Clone(baseArgs), notifyURLFlag, "--notify-format=slack"); !slices.Equal(c.Args, want) {
				t.Errorf("args %q, want %q", c.Args, want)
			}
			vols := cj.Spec.JobTemplate.Spec.Template.Spec.Volumes
			if len(vols) != 1 || vols[0].Secret == nil || vols[0].Secret.SecretName != notifyURLSecret || !slices.Equal(vols[0].Secret.Items, []corev1.KeyToPath{{Key: "url", Path: "url"}}) {
				t.Fatalf("volumes %+v, want Secret %s's url alone", vols, notifyURLSecret)
			}
			if ptr.Deref(vols[0].Secret.Optional, false) {
				t.Error("Secret volume optional: nsman would start without its URL")
			}
			if m := ptr.Deref(vols[0].Secret.DefaultMode, 0o644); m&0o007 != 0 {
				t.Errorf("URL file mode %o readable by others", m)
			}
			if !slices.Equal(c.VolumeMounts, []corev1.VolumeMount{{Name: vols[0].Name, MountPath: notifyURLDir, ReadOnly: true}}) {
				t.Errorf("mounts %+v, want %s read-only at %s", c.VolumeMounts, vols[0].Name, notifyURLDir)
			}
		}},
		{overlay: "sharded", check: func(t *testing.T, cj *batchv1.CronJob) {
			job := cj.Spec.JobTemplate.Spec
			if job.CompletionMode == nil || *job.CompletionMode != batchv1.IndexedCompletion {
				t.Errorf("completionMode %v, want Indexed", job.CompletionMode)
			}
			shards := ptr.Deref(job.Completions, 1)
			if shards < 2 || ptr.Deref(job.Parallelism, 1) != shards {
				t.Errorf("completions %d, parallelism %d: want as many shards, more than one, all at once", shards, ptr.Deref(job.Parallelism, 1))
			}
			if args := nsmanContainer(t, cj).Args; !slices.Equal(args, append(slices.Clone(baseArgs), fmt.Sprintf("--shard-count=%d", shards))) {
				t.Errorf("args %q, want the base's %q and --shard-count=%d", args, baseArgs, shards)
			}
		}},
		{overlay: "webhook-egress", check: func(t *testing.T, cj *batchv1.CronJob) {
			args := nsmanContainer(t, cj).Args
			if len(args) != len(baseArgs)+1 || !slices.Equal(args[:len(baseArgs)], baseArgs) || !strings.HasPrefix(args[len(baseArgs)], webhookAllowFlag) {
				t.Fatalf("args %q, want the base's %q and %s", args, baseArgs, webhookAllowFlag)
			}
			value := strings.TrimPrefix(args[len(baseArgs)], webhookAllowFlag)
			if _, err := webhook.ParseAllowList(strings.Split(value, ",")); err != nil || value == "" {
				t.Errorf("%s%s: %v", webhookAllowFlag, value, err)
			}
		}, added: []string{"NetworkPolicy namespace-manager/nsman-egress"}, checkAdded: checkEgressPolicy},
		{overlay: "owner-delete", check: func(t *testing.T, cj *batchv1.CronJob) {
			if args := nsmanContainer(t, cj).Args; !slices.Equal(args, baseArgs) {
				t.Errorf("args %q, want the base's %q", args, baseArgs)
			}
		}, added: []string{"ClusterRole /nsman-owner-delete", "ClusterRoleBinding /nsman-owner-delete"}, checkAdded: checkOwnerDelete},
		{overlay: "flux-suspend", check: func(t *testing.T, cj *batchv1.CronJob) {
			if args := nsmanContainer(t, cj).Args; !slices.Equal(args, baseArgs) {
				t.Errorf("args %q, want the base's %q", args, baseArgs)
			}
		}, added: []string{"ClusterRole /nsman-patchable", "ClusterRoleBinding /nsman-patchable"}, checkAdded: checkFluxSuspend, patchable: fluxSuspendPatchable},
		{overlay: "freeze", check: func(t *testing.T, cj *batchv1.CronJob) {
			checkFreezeOverlay(t, cj, baseArgs)
		}, added: []string{"ConfigMap namespace-manager/" + freezeConfigMap}, checkAdded: checkFreezeCalendar},
	} {
		t.Run(tc.overlay, func(t *testing.T) {
			objs := kustomize(ctx, t, filepath.Join("deploy", "overlays", tc.overlay))
			// Everything but the CronJob is the base's, unchanged but for
			// the admission policy's configuredPatchable where the overlay
			// sets it, and the overlay adds nothing but what it says: not
			// the Secret the operator creates.
			want := append(identities(base), tc.added...)
			slices.Sort(want)
			if got := identities(objs); !slices.Equal(got, want) {
				t.Errorf("overlay renders %q, want the base's and %q: %q", got, tc.added, want)
			}
			for _, o := range objs {
				if o.GetKind() == "CronJob" || slices.Contains(tc.added, identity(o)) {
					continue
				}
				i := slices.IndexFunc(base, func(b *unstructured.Unstructured) bool { return identity(b) == identity(o) })
				if i < 0 {
					continue
				}
				want := base[i].DeepCopy()
				if tc.patchable != "" && identity(o) == "ValidatingAdmissionPolicy /nsman" {
					if err := nsmantest.SetPatchable([]*unstructured.Unstructured{want}, "nsman", tc.patchable); err != nil {
						t.Fatal(err)
					}
				}
				if !reflect.DeepEqual(o.Object, want.Object) {
					t.Errorf("overlay changes %s", identity(o))
				}
			}
			obj := cronJobObject(t, objs)
			cj := typedCronJob(t, obj)
			if cj.Name != baseCJ.Name || cj.Namespace != baseCJ.Namespace {
				t.Errorf("CronJob %s/%s, want the base's %s/%s: the overlay replaces it", cj.Namespace, cj.Name, baseCJ.Namespace, baseCJ.Name)
			}
			tc.check(t, cj)
			// With the base's args, volumes, mounts and completions back,
			// nothing else differs.
			same := cj.DeepCopy()
			job, baseJob := &same.Spec.JobTemplate.Spec, baseCJ.Spec.JobTemplate.Spec
			job.CompletionMode, job.Completions, job.Parallelism = baseJob.CompletionMode, baseJob.Completions, baseJob.Parallelism
			spec := &same.Spec.JobTemplate.Spec.Template.Spec
			spec.Volumes = baseCJ.Spec.JobTemplate.Spec.Template.Spec.Volumes
			spec.Containers[0].Args = baseArgs
			spec.Containers[0].VolumeMounts = nsmanContainer(t, baseCJ).VolumeMounts
			if !equality.Semantic.DeepEqual(same.Spec, baseCJ.Spec) {
				got, _ := json.MarshalIndent(same.Spec, "", "  ")
				want, _ := json.MarshalIndent(baseCJ.Spec, "", "  ")
				t.Errorf("overlay changes more than args, volumes, mounts and completions; all else is\n%s\nwant the base's\n%s", got, want)
			}

			warned, err := createCronJobDryRun(ctx, obj, ns)
			if err != nil {
				t.Fatalf("CronJob rejected: %v", err)
			}
			if len(warned) > 0 {
				t.Errorf("CronJob in a restricted namespace drew warnings: %q", warned)
			}
			if err := createPodDryRun(ctx, ns, podFrom(cj)); err != nil {
				t.Fatalf("pod rejected under Pod Security restricted: %v", err)
			}

			var added []*unstructured.Unstructured
			for _, o := range objs {
				if slices.Contains(tc.added, identity(o)) {
					added = append(added, o)
				}
			}
			if tc.checkAdded != nil {
				tc.checkAdded(t, cj, added)
			}
			for _, o := range added {
				resource, ok := addedResources[o.GroupVersionKind()]
				if !ok {
					t.Fatalf("%s: no resource known for %s", identity(o), o.GroupVersionKind())
				}
				warned, err := createDryRun(ctx, resource, o, ns)
				if err != nil {
					t.Fatalf("%s rejected: %v", identity(o), err)
				}
				if len(warned) > 0 {
					t.Errorf("%s drew warnings: %q", identity(o), warned)
				}
			}
		})
	}
}

// The --webhook-allow flag as an overlay passes it.
const webhookAllowFlag = "--webhook-allow="

// addedResources are the resources of the kinds overlays add to the base.
var addedResources = map[schema.GroupVersionKind]schema.GroupVersionResource{
	networkingv1.SchemeGroupVersion.WithKind("NetworkPolicy"): networkingv1.SchemeGroupVersion.WithResource("networkpolicies"),
	corev1.SchemeGroupVersion.WithKind("ConfigMap"):           corev1.SchemeGroupVersion.WithResource("configmaps"),
	rbacv1.SchemeGroupVersion.WithKind("ClusterRole"):         rbacv1.SchemeGroupVersion.WithResource("clusterroles"),
	rbacv1.SchemeGroupVersion.WithKind("ClusterRoleBinding"):  rbacv1.SchemeGroupVersion.WithResource("clusterrolebindings"),
}

// checkOwnerDelete checks what lets a DELETE via owner delete owners: a
// ClusterRole that grants delete on the owner kinds and nothing else, bound
// to the CronJob's ServiceAccount alone.
func checkOwnerDelete(t *testing.T, cj *batchv1.CronJob, objs []*unstructured.Unstructured) {
	t.Helper()
	var want []string
	for _, p := range owner.DeletePermissions() {
		want = append(want, p.Verb+" "+p.Resource+"."+p.Group)
	}
	slices.Sort(want)
	checkGrant(t, cj, objs, "-owner-delete", want)
}

// fluxSuspendPatchable is the configuredPatchable of
// deploy/components/flux-suspend: Flux's spec.suspend alone.
const fluxSuspendPatchable = "{'helm.toolkit.fluxcd.io/helmreleases': ['spec.suspend'], 'kustomize.toolkit.fluxcd.io/kustomizations': ['spec.suspend']}"

// checkFluxSuspend checks what lets a sleep's patches suspend Flux's
// HelmReleases and Kustomizations: a ClusterRole that grants list and
// patch of them and nothing else, bound to the CronJob's ServiceAccount
// alone.
func checkFluxSuspend(t *testing.T, cj *batchv1.CronJob, objs []*unstructured.Unstructured) {
	t.Helper()
	checkPatchableRBAC(t, cj, objs, []string{
		"list helmreleases.helm.toolkit.fluxcd.io", "list kustomizations.kustomize.toolkit.fluxcd.io",
		"patch helmreleases.helm.toolkit.fluxcd.io", "patch kustomizations.kustomize.toolkit.fluxcd.io",
	})
}

// checkPatchableRBAC checks the ClusterRole *-patchable among objs: it
// grants exactly want ("verb resource.group", sorted) and is bound to the
// CronJob's ServiceAccount alone.
func checkPatchableRBAC(t *testing.T, cj *batchv1.CronJob, objs []*unstructured.Unstructured, want []string) {
	t.Helper()
	checkGrant(t, cj, objs, "-patchable", want)
}

// checkGrant checks the ClusterRole *suffix among objs: it grants exactly
// want ("verb resource.group", sorted) and is bound to the CronJob's
// ServiceAccount alone.
func checkGrant(t *testing.T, cj *batchv1.CronJob, objs []*unstructured.Unstructured, suffix string, want []string) {
	t.Helper()
	var role rbacv1.ClusterRole
	var binding rbacv1.ClusterRoleBinding
	for _, o := range objs {
		var into any
		switch {
		case o.GetKind() == "ClusterRole" && strings.HasSuffix(o.GetName(), suffix):
			into = &role
		case o.GetKind() == "ClusterRoleBinding" && strings.HasSuffix(o.GetName(), suffix):
			into = &binding
		default:
			continue
		}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(o.Object, into, true); err != nil {
			t.Fatalf("%s: %v", identity(o), err)
		}
	}
	var granted []string
	for _, r := range role.Rules {
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				for _, v := range r.Verbs {
					granted = append(granted, v+" "+res+"."+g)
				}
			}
		}
	}
	slices.Sort(granted)
	if !slices.Equal(granted, want) {
		t.Errorf("ClusterRole %q grants %q, want %q", role.Name, granted, want)
	}
	sa := cj.Spec.JobTemplate.Spec.Template.Spec.ServiceAccountName
	if binding.RoleRef.Name != role.Name || len(binding.Subjects) != 1 || binding.Subjects[0].Kind != "ServiceAccount" ||
		binding.Subjects[0].Name != sa || binding.Subjects[0].Namespace != cj.Namespace {
		t.Errorf("ClusterRoleBinding %+v, want %q bound to ServiceAccount %s/%s alone", binding, role.Name, cj.Namespace, sa)
	}
}

// checkEgressPolicy checks the webhook-egress overlay's NetworkPolicy: it
// selects the CronJob's pods, limits their egress only, and lets them reach
// DNS, the API server and some receivers.
func checkEgressPolicy(t *testing.T, cj *batchv1.CronJob, objs []*unstructured.Unstructured) {
	t.Helper()
	if len(objs) != 1 {
		t.Fatalf("%d objects added, want the NetworkPolicy alone", len(objs))
	}
	np := &networkingv1.NetworkPolicy{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(objs[0].Object, np, true); err != nil {
		t.Fatalf("NetworkPolicy %s: %v", objs[0].GetName(), err)
	}
	if np.Namespace != cj.Namespace {
		t.Errorf("NetworkPolicy in %s, the CronJob in %s", np.Namespace, cj.Namespace)
	}
	sel, podLabels := np.Spec.PodSelector, cj.Spec.JobTemplate.Spec.Template.Labels
	selects := len(sel.MatchLabels) > 0 && len(sel.MatchExpressions) == 0
	for k, v := range sel.MatchLabels {
		selects = selects && podLabels[k] == v
	}
	if !selects {
		t.Errorf("podSelector %+v, want labels that select nsman's pods, labelled %v, and not every pod", sel, podLabels)
	}
	if !slices.Equal(np.Spec.PolicyTypes, []networkingv1.PolicyType{networkingv1.PolicyTypeEgress}) {
		t.Errorf("policyTypes %v, want Egress alone", np.Spec.PolicyTypes)
	}
	allows := func(rule networkingv1.NetworkPolicyEgressRule, protocol corev1.Protocol, port int) bool {
		return slices.ContainsFunc(rule.Ports, func(p networkingv1.NetworkPolicyPort) bool {
			return ptr.Deref(p.Protocol, corev1.ProtocolTCP) == protocol && p.Port != nil && p.Port.IntValue() == port
		})
	}
	dns := slices.ContainsFunc(np.Spec.Egress, func(r networkingv1.NetworkPolicyEgressRule) bool {
		return allows(r, corev1.ProtocolUDP, 53) && allows(r, corev1.ProtocolTCP, 53) && slices.ContainsFunc(r.To, func(p networkingv1.NetworkPolicyPeer) bool {
			return p.NamespaceSelector != nil && p.NamespaceSelector.MatchLabels["kubernetes.io/metadata.name"] == "kube-system" &&
				p.PodSelector != nil && p.PodSelector.MatchLabels["k8s-app"] == "kube-dns"
		})
	})
	if !dns {
		t.Errorf("egress %+v: no rule for kube-dns in kube-system on UDP and TCP 53", np.Spec.Egress)
	}
	if !slices.ContainsFunc(np.Spec.Egress, func(r networkingv1.NetworkPolicyEgressRule) bool {
		return allows(r, corev1.ProtocolTCP, 443) && allows(r, corev1.ProtocolTCP, 6443)
	}) {
		t.Errorf("egress %+v: no rule for the API server on TCP 443 and 6443", np.Spec.Egress)
	}
	if !slices.ContainsFunc(np.Spec.Egress, func(r networkingv1.NetworkPolicyEgressRule) bool {
		return slices.ContainsFunc(r.To, func(p networkingv1.NetworkPolicyPeer) bool { return p.IPBlock != nil }) &&
			slices.ContainsFunc(r.To, func(p networkingv1.NetworkPolicyPeer) bool { return p.NamespaceSelector != nil && p.PodSelector == nil })
	}) {
		t.Errorf("egress %+v: no example rule for webhook receivers by namespace and by address", np.Spec.Egress)
	}
}

// kustomize renders dir, relative to the repository, with the pinned
// kubectl.
func kustomize(ctx context.Context, t *testing.T, dir string, flags ...string) []*unstructured.Unstructured {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, nsmantest.Kubectl(t), append([]string{"kustomize"}, append(flags, filepath.Join(nsmantest.RepoRoot(), dir))...)...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("kubectl kustomize %s: %v\n%s", dir, err, stderr.String())
	}
	objs, err := nsmantest.Decode(stdout.Bytes())
	if err != nil {
		t.Fatalf("kubectl kustomize %s: %v", dir, err)
	}
	return objs
}

func identity(o *unstructured.Unstructured) string {
	return o.GetKind() + " " + o.GetNamespace() + "/" + o.GetName()
}

// identities lists the objects by kind, namespace and name, sorted.
func identities(objs []*unstructured.Unstructured) []string {
	ids := make([]string, 0, len(objs))
	for _, o := range objs {
		ids = append(ids, identity(o))
	}
	slices.Sort(ids)
	return ids
}

// cronJobObject returns the one CronJob among objs.
func cronJobObject(t *testing.T, objs []*unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	var found []*unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() == "CronJob" {
			found = append(found, o)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d CronJobs rendered, want 1", len(found))
	}
	return found[0]
}

// typedCronJob converts obj, failing on any field batch/v1 does not know: a
// misplaced field in a manifest would otherwise vanish without a trace.
func typedCronJob(t *testing.T, obj *unstructured.Unstructured) *batchv1.CronJob {
	t.Helper()
	if obj.GetAPIVersion() != "batch/v1" || obj.GetKind() != "CronJob" {
		t.Fatalf("%s %s, want a batch/v1 CronJob", obj.GetAPIVersion(), obj.GetKind())
	}
	cj := &batchv1.CronJob{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(obj.Object, cj, true); err != nil {
		t.Fatalf("CronJob %s: %v", obj.GetName(), err)
	}
	return cj
}

// nsmanContainer is the CronJob's container named nsman, its only one.
func nsmanContainer(t *testing.T, cj *batchv1.CronJob) corev1.Container {
	t.Helper()
	cs := cj.Spec.JobTemplate.Spec.Template.Spec.Containers
	if len(cs) != 1 || cs[0].Name != "nsman" {
		t.Fatalf("containers %+v, want one named nsman", cs)
	}
	return cs[0]
}

// podFrom is the pod the CronJob's Jobs would create.
func podFrom(cj *batchv1.CronJob) *corev1.Pod {
	tmpl := cj.Spec.JobTemplate.Spec.Template.DeepCopy()
	pod := &corev1.Pod{ObjectMeta: tmpl.ObjectMeta, Spec: tmpl.Spec}
	pod.Name = cj.Name
	return pod
}

// restrictedNamespace creates a namespace that enforces, and warns about,
// Pod Security "restricted" at the API server's version, with the
// ServiceAccount the CronJob names.
func restrictedNamespace(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	ns, err := shared.Admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		GenerateName: "restricted-",
		Labels: map[string]string{
			"nsman.test/test":                            "true",
			"pod-security.kubernetes.io/enforce":         "restricted",
			"pod-security.kubernetes.io/enforce-version": "latest",
			"pod-security.kubernetes.io/warn":            "restricted",
			"pod-security.kubernetes.io/warn-version":    "latest",
		},
	}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create restricted namespace: %v", err)
	}
	t.Cleanup(func() {
		err := shared.Admin.CoreV1().Namespaces().Delete(context.Background(), ns.Name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("delete namespace %s: %v", ns.Name, err)
		}
	})
	// Pod admission would need it if the ServiceAccount admission plugin
	// were on.
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: nsmantest.ServiceAccountName}}
	if _, err := shared.Admin.CoreV1().ServiceAccounts(ns.Name).Create(ctx, sa, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create ServiceAccount: %v", err)
	}
	return ns.Name
}

// createPodDryRun creates pod in namespace as admin, persisting nothing;
// admission, PodSecurity included, runs all the same.
func createPodDryRun(ctx context.Context, namespace string, pod *corev1.Pod) error {
	_, err := shared.Admin.CoreV1().Pods(namespace).Create(ctx, pod, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	return err
}

// createCronJobDryRun creates obj in namespace as admin, persisting
// nothing, with strict field validation, and returns the warnings the API
// server sent.
func createCronJobDryRun(ctx context.Context, obj *unstructured.Unstructured, namespace string) ([]string, error) {
	return createDryRun(ctx, cronJobResource, obj, namespace)
}

// createDryRun creates obj, a resource, in namespace as admin, persisting
// nothing, with strict field validation, and returns the warnings the API
// server sent.
func createDryRun(ctx context.Context, resource schema.GroupVersionResource, obj *unstructured.Unstructured, namespace string) ([]string, error) {
	cfg := rest.CopyConfig(shared.AdminConfig)
	w := &warnings{}
	cfg.WarningHandlerWithContext = w
	client, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	o := obj.DeepCopy()
	opts := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}, FieldValidation: metav1.FieldValidationStrict}
	if o.GetNamespace() == "" { // cluster-scoped
		_, err = client.Resource(resource).Create(ctx, o, opts)
		return w.all(), err
	}
	o.SetNamespace(namespace)
	_, err = client.Resource(resource).Namespace(namespace).Create(ctx, o, opts)
	return w.all(), err
}

// warnings collects the Warning headers of API responses.
type warnings struct {
	mu   sync.Mutex
	msgs []string
}

func (w *warnings) HandleWarningHeaderWithContext(_ context.Context, _ int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.msgs = append(w.msgs, text)
}

func (w *warnings) all() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.msgs)
}

// ptrString shows an optional field in a failure message.
func ptrString[T any](p *T) string {
	if p == nil {
		return "unset"
	}
	return fmt.Sprint(*p)
}
