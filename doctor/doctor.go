// Package doctor checks a cluster as a sweep would see it: the API
// server's version, the NamespaceManager CRD, the permissions a sweep uses,
// which kinds of the objects that own namespaces nsman can see, the
// namespaces nsman trusts and protects, the webhook address policy, the
// installed CronJob and the admission policy that fences it, and whether
// the Java operator nsman replaces still runs beside it. Each check says
// what is wrong and how to fix it; nothing is written but access reviews.
package doctor

import (
	"cmp"
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	batchv1 "k8s.io/api/batch/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/nsman/nsman/deploy"
	"github.com/nsman/nsman/internal/cluster"
	"github.com/nsman/nsman/internal/status"
	"github.com/nsman/nsman/policy"
	"github.com/nsman/nsman/webhook"
)

// Status is a check's verdict.
type Status string

const (
	// OK: nothing to do.
	OK Status = "ok"
	// Warning: a sweep works, but something may not be what was meant, or
	// could not be told.
	Warning Status = "warning"
	// Failed: a sweep fails, or does less than its managers ask.
	Failed Status = "failed"
)

// Check is one thing looked at, with what was found.
type Check struct {
	// Name is the check's stable name: apiServer, crd, permissions,
	// ownerKinds, namespaces, webhooks, cronJob, admissionPolicy or
	// javaOperator.
	Name    string `json:"name"`
	Status  Status `json:"status"`
	Message string `json:"message"`
	// Details are the particulars, a line each (never null).
	Details []string `json:"details"`
	// Fix says what to do, where doctor can tell.
	Fix string `json:"fix,omitempty"`
}

// Report is every check, in order.
type Report struct {
	OK     bool    `json:"ok"`
	Checks []Check `json:"checks"`
}

// Options are what the checks judge against.
type Options struct {
	// Version is this nsman's, as messages name it.
	Version string
	// InPod: doctor runs in nsman's pod, as nsman's ServiceAccount.
	InPod bool
	// Installed is nsman's CronJob, as found from outside its pod; nil
	// when none was. Its ServiceAccount's permissions are checked (a
	// SubjectAccessReview each); without it, the caller's own
	// (SelfSubjectAccessReview), which are nsman's only InPod.
	Installed  *Installed
	Namespaces Namespaces
	// Allow is --webhook-allow (nil: none).
	Allow *webhook.AllowList
}

// Installed is nsman's CronJob and what its nsman container runs.
type Installed struct {
	CronJob *batchv1.CronJob
	// ServiceAccount is the name its pods run as, in its namespace.
	ServiceAccount string
	Image          string
	// DryRun: its sweeps run with --dry-run.
	DryRun bool
}

// serviceAccount is the installed CronJob's ServiceAccount as
// "namespace/name", or "" when none was found.
func (i *Installed) serviceAccount() string {
	if i == nil {
		return ""
	}
	return i.CronJob.Namespace + "/" + i.ServiceAccount
}

// image is the installed CronJob's image, or "" when none was found.
func (i *Installed) image() string {
	if i == nil {
		return ""
	}
	return i.Image
}

// Namespaces are the namespace nsman runs in and what follows from it.
type Namespaces struct {
	// Own is the namespace nsman runs in; From says how it was learnt
	// ("its pod", "CronJob NS/NAME"). Own is empty when neither told it.
	Own, From string
	// Trusted and Protected are a sweep's, as its flags and Own make them.
	Trusted, Protected []string
	// Problem, if any, is why the installed CronJob was not found.
	Problem string
}

// Run makes every check.
func Run(ctx context.Context, kube kubernetes.Interface, dyn dynamic.Interface, opts Options) Report {
	checks := []Check{
		apiServer(kube),
		crd(ctx, kube, dyn, opts.Version, opts.Installed.image()),
		permissions(ctx, kube, opts.Installed.serviceAccount(), opts.InPod),
		ownerKinds(ctx, kube, opts.Installed.serviceAccount(), opts.InPod),
		namespaces(ctx, kube, opts.Namespaces),
		webhooks(opts.Allow),
		cronJob(ctx, kube, opts.Installed),
		admissionPolicy(ctx, kube, opts.Installed.serviceAccount()),
		javaOperator(ctx, kube),
	}
	r := Report{OK: true, Checks: checks}
	for i := range r.Checks {
		if r.Checks[i].Details == nil {
			r.Checks[i].Details = []string{}
		}
		r.OK = r.OK && r.Checks[i].Status != Failed
	}
	return r
}

func apiServer(kube kubernetes.Interface) Check {
	c := Check{Name: "apiServer"}
	info, err := kube.Discovery().ServerVersion()
	if err != nil {
		c.Status, c.Message = Failed, "the API server's version could not be read: "+err.Error()
		return c
	}
	have, err := version.ParseGeneric(info.GitVersion)
	if err != nil {
		c.Status, c.Message = Warning, fmt.Sprintf("the API server's version %q cannot be read as a version; nsman needs Kubernetes %s or later", info.GitVersion, deploy.MinKubernetes)
		return c
	}
	if !have.AtLeast(version.MustParseGeneric(deploy.MinKubernetes)) {
		c.Status, c.Message = Failed, fmt.Sprintf("Kubernetes %s: nsman needs %s or later", info.GitVersion, deploy.MinKubernetes)
		c.Fix = "upgrade the cluster to " + deploy.MinKubernetes + " or later: nsman's admission policy (admissionregistration.k8s.io/v1) needs it, and nsman is tested from " + deploy.MinKubernetes + " on"
		return c
	}
	c.Status, c.Message = OK, fmt.Sprintf("Kubernetes %s (nsman needs %s or later)", info.GitVersion, deploy.MinKubernetes)
	return c
}

var crdResource = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// crdName is the NamespaceManager CRD's name, the original's and nsman's.
const crdName = policy.Resource + "." + policy.Group

// crdFix says how to install nsman's CRD.
const crdFix = "install nsman (docs/helm.md, whose chart installs and upgrades the CRD; or docs/kustomize.md), or the CRD alone: kubectl apply --server-side -f deploy/base/crd.yaml of this release"

func crd(ctx context.Context, kube kubernetes.Interface, dyn dynamic.Interface, own, installed string) Check {
	c := crdOf(ctx, kube, dyn, own)
	if tag := imageTag(installed); tag != "" && c.Status != OK && strings.TrimPrefix(tag, "v") != strings.TrimPrefix(own, "v") {
		// The CRD is judged against this binary's; the CronJob may run another release.
		c.Details = append(c.Details, "the CronJob runs "+installed+", this is nsman "+own+": judged against "+own+"'s CRD")
	}
	return c
}

// imageTag is the tag of an image reference, or "" when it has none (or
// a digest).
func imageTag(image string) string {
	if strings.Contains(image, "@") {
		return ""
	}
	name := image[strings.LastIndex(image, "/")+1:]
	_, tag, _ := strings.Cut(name, ":")
	return tag
}

func crdOf(ctx context.Context, kube kubernetes.Interface, dyn dynamic.Interface, own string) Check {
	c := Check{Name: "crd"}
	obj, err := dyn.Resource(crdResource).Get(ctx, crdName, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		c.Status, c.Message, c.Fix = Failed, "the CRD "+crdName+" is not installed: a sweep has no managers to read", crdFix
		return c
	case apierrors.IsForbidden(err):
		return crdByDiscovery(kube)
	case err != nil:
		c.Status, c.Message = Failed, "the CRD "+crdName+" could not be read: "+err.Error()
		return c
	}
	var want map[string]any
	if err := yaml.Unmarshal(deploy.CRD, &want); err != nil {
		panic("deploy.CRD: " + err.Error()) // embedded at build time, and tested
	}
	wantSchema, _ := servedVersion(want)
	haveSchema, hasStatus := servedVersion(obj.Object)
	if haveSchema == nil {
		c.Status, c.Message, c.Fix = Failed, "the CRD "+crdName+" does not serve "+policy.Version+" with a schema", crdFix
		return c
	}
	gap, unknown := compareSchemas(wantSchema, haveSchema)
	if !hasStatus {
		// Under the original CRD nsman keeps its status in an annotation.
		gap.pruned = slices.DeleteFunc(gap.pruned, func(p string) bool { return p == "status" })
		c.Status = Warning
		c.Message = "the original operator's CRD (no status subresource): a sweep works under it, keeping its status in the annotation " + status.StatusAnnotation + ", but the API server prunes or refuses what nsman adds"
		c.Details = gap.lines()
		c.Fix = "replace it with nsman's CRD, which keeps every manager: docs/migrating.md"
		return c
	}
	switch {
	case !gap.empty():
		c.Status = Failed
		c.Message = "nsman's CRD, older than this nsman (" + own + "): the API server prunes or refuses what it lacks"
		c.Details = gap.lines()
		c.Fix = upgradeFix(obj.GetAnnotations(), own)
	case len(unknown) > 0:
		c.Status = Warning
		c.Message = "nsman's CRD, newer than this nsman (" + own + "): it declares fields this nsman does not know"
		for _, p := range unknown {
			c.Details = append(c.Details, p+": unknown to this nsman")
		}
		c.Fix = "use the nsman release that installed the CRD, so that a dry run reads managers as the CronJob does"
	default:
		c.Status, c.Message = OK, "nsman's CRD, as this nsman ("+own+") knows it"
	}
	return c
}

// upgradeFix says how to bring the CRD to this nsman's: through the Helm
// release that owns it, if one does.
func upgradeFix(annotations map[string]string, own string) string {
	if release := annotations["meta.helm.sh/release-name"]; release != "" {
		chart := "oci://ghcr.io/nsman/charts/nsman"
		if v, ok := chartVersion(own); ok {
			chart += " --version " + v
		} else {
			chart += " --version X.Y.Z (this nsman's release; " + own + " is none)"
		}
		return "upgrade the Helm release that owns it to the chart of this nsman: helm upgrade " + release + " " + chart + " -n " + annotations["meta.helm.sh/release-namespace"] + " --reuse-values (the chart upgrades its CRD)"
	}
	return "upgrade it: kubectl apply --server-side -f deploy/base/crd.yaml of this release"
}

// release is a release's tag, vMAJOR.MINOR.PATCH with an optional
// pre-release; git describe's -N-gCOMMIT, a pseudo-version (its
// pre-release ends in a timestamp and a commit) and +build are not.
var (
	release    = regexp.MustCompile(`^v([0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.]+)?)$`)
	notRelease = regexp.MustCompile(`-[0-9]+-g[0-9a-f]+$|[0-9]{14}-[0-9a-f]{12}$`)
)

// chartVersion is the chart version of the release nsman version v is
// (the tag without its v), or false when v names no release.
func chartVersion(v string) (string, bool) {
	m := release.FindStringSubmatch(v)
	if m == nil || notRelease.MatchString(v) {
		return "", false
	}
	return m[1], true
}

// crdByDiscovery tells nsman's CRD from the original by discovery alone,
// for a caller who may not read CRDs.
func crdByDiscovery(kube kubernetes.Interface) Check {
	c := Check{Name: "crd"}
	resources, err := kube.Discovery().ServerResourcesForGroupVersion(cluster.ManagerResource.GroupVersion().String())
	has := func(name string) bool {
		return resources != nil && slices.ContainsFunc(resources.APIResources, func(r metav1.APIResource) bool { return r.Name == name })
	}
	switch {
	case err != nil && !apierrors.IsNotFound(err):
		c.Status, c.Message = Failed, "NamespaceManagers could not be discovered: "+err.Error()
	case !has(policy.Resource):
		c.Status, c.Message, c.Fix = Failed, "the CRD "+crdName+" is not installed: a sweep has no managers to read", crdFix
	case !has(policy.Resource + "/status"):
		c.Status = Warning
		c.Message = "the original operator's CRD (no status subresource): the API server prunes what nsman adds"
		c.Fix = "replace it with nsman's CRD, which keeps every manager: docs/migrating.md"
	default:
		c.Status = Warning
		c.Message = "nsman's CRD; whether it is older than this nsman is not known: you may not get customresourcedefinitions"
		c.Fix = "run nsman doctor as someone who may read CRDs"
	}
	return c
}

// servedVersion returns the schema of the CRD's served policy.Version and
// whether it has a status subresource.
func servedVersion(crd map[string]any) (map[string]any, bool) {
	spec, _ := crd["spec"].(map[string]any)
	versions, _ := spec["versions"].([]any)
	for _, v := range versions {
		v, _ := v.(map[string]any)
		if v["name"] != policy.Version || v["served"] != true {
			continue
		}
		sub, _ := v["subresources"].(map[string]any)
		_, status := sub["status"]
		s, _ := v["schema"].(map[string]any)
		root, _ := s["openAPIV3Schema"].(map[string]any)
		return root, status
	}
	return nil, false
}

// serviceAccountGroups are the groups every ServiceAccount's token carries.
func serviceAccountGroups(namespace string) []string {
	return []string{"system:serviceaccounts", "system:serviceaccounts:" + namespace, "system:authenticated"}
}

// accessReview says whether someone may do what attrs describe, as the API
// server answers an access review.
type accessReview func(attrs *authorizationv1.ResourceAttributes) (bool, error)

// selfReview asks about the caller's own permissions.
func selfReview(ctx context.Context, kube kubernetes.Interface) accessReview {
	return func(attrs *authorizationv1.ResourceAttributes) (bool, error) {
		r, err := kube.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
			Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: attrs},
		}, metav1.CreateOptions{})
		if err != nil {
			return false, err
		}
		return r.Status.Allowed, nil
	}
}

// serviceAccountReview asks about the permissions of the ServiceAccount
// name in namespace ns, with the groups its token carries.
func serviceAccountReview(ctx context.Context, kube kubernetes.Interface, ns, name string) accessReview {
	return func(attrs *authorizationv1.ResourceAttributes) (bool, error) {
		r, err := kube.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{
			Spec: authorizationv1.SubjectAccessReviewSpec{ResourceAttributes: attrs, User: "system:serviceaccount:" + ns + ":" + name, Groups: serviceAccountGroups(ns)},
		}, metav1.CreateOptions{})
		if err != nil {
			return false, err
		}
		return r.Status.Allowed, nil
	}
}

// notNsmanFix says why the caller's own permissions say nothing of nsman's.
const notNsmanFix = "these are your permissions, not nsman's: run nsman doctor where nsman's CronJob is installed (--config-from NAMESPACE/NAME names it), or in its pod"

// reviewer asks whether the ServiceAccount a sweep runs as may do
// something, or the caller when that is not known or the caller may not
// ask about others.
type reviewer struct {
	// who is whom the answers are of: "you" or "ServiceAccount NS/NAME".
	who          string
	review, self accessReview
	// notNsman: the answers are the caller's, outside nsman's pod.
	notNsman bool
	// fellBack says, when the caller may not ask about the ServiceAccount,
	// that the answers are the caller's own.
	fellBack string
}

func newReviewer(ctx context.Context, kube kubernetes.Interface, serviceAccount string, inPod bool) *reviewer {
	self := selfReview(ctx, kube)
	// Outside nsman's pod, the caller's permissions say nothing of nsman's.
	r := &reviewer{who: "you", review: self, self: self, notNsman: !inPod && serviceAccount == ""}
	if ns, name, ok := strings.Cut(serviceAccount, "/"); ok {
		r.who, r.review = "ServiceAccount "+serviceAccount, serviceAccountReview(ctx, kube, ns, name)
	}
	return r
}

// allowed is the answer of one review.
func (r *reviewer) allowed(attrs *authorizationv1.ResourceAttributes) (bool, error) {
	allowed, err := r.review(attrs)
	if apierrors.IsForbidden(err) && r.who != "you" {
		// One may not be allowed to ask about others: then ask about oneself.
		r.fellBack = "you may not create subjectaccessreviews: these are your own permissions, not " + r.who + "'s"
		r.who, r.review, r.notNsman = "you", r.self, true
		allowed, err = r.review(attrs)
	}
	return allowed, err
}

func permissions(ctx context.Context, kube kubernetes.Interface, serviceAccount string, inPod bool) Check {
	c := Check{Name: "permissions"}
	r := newReviewer(ctx, kube, serviceAccount, inPod)
	var missing []string
	for _, p := range cluster.Permissions {
		allowed, err := r.allowed(&authorizationv1.ResourceAttributes{Verb: p.Verb, Group: p.Group, Resource: p.Resource, Subresource: p.Subresource})
		if err != nil {
			c.Details = appendNonEmpty(c.Details, r.fellBack)
			c.Status, c.Message = Failed, "the permissions of "+r.who+" could not be reviewed: "+err.Error()
			return c
		}
		if !allowed {
			missing = append(missing, p.String()+" ("+p.Why+")")
		}
	}
	c.Details = appendNonEmpty(c.Details, r.fellBack)
	who := r.who
	switch {
	case len(missing) > 0 && r.notNsman:
		c.Status = Warning
		c.Message = fmt.Sprintf("%s may not do %d of the %d things a sweep does", who, len(missing), len(cluster.Permissions))
		c.Details = append(c.Details, missing...)
		c.Fix = notNsmanFix
	case len(missing) > 0:
		c.Status = Failed
		c.Message = fmt.Sprintf("%s may not do %d of the %d things a sweep does", who, len(missing), len(cluster.Permissions))
		c.Details = append(c.Details, missing...)
		c.Fix = "grant them to " + who + ", cluster-wide: nsman's ClusterRole (deploy/base/rbac.yaml, or the chart's) holds exactly these"
	case r.notNsman:
		c.Status, c.Message = Warning, fmt.Sprintf("%s may do all %d things a sweep does", who, len(cluster.Permissions))
		c.Fix = notNsmanFix
	default:
		c.Status, c.Message = OK, fmt.Sprintf("%s may do all %d things a sweep does", who, len(cluster.Permissions))
	}
	return c
}

// appendNonEmpty appends line to lines unless it is empty.
func appendNonEmpty(lines []string, line string) []string {
	if line == "" {
		return lines
	}
	return append(lines, line)
}

func namespaces(ctx context.Context, kube kubernetes.Interface, n Namespaces) Check {
	c := Check{Name: "namespaces", Status: OK, Details: []string{
		"trusted (may target other namespaces, may hold rules): " + cmp.Or(strings.Join(n.Trusted, ", "), "none"),
		"protected (never acted on): " + strings.Join(n.Protected, ", "),
	}}
	if n.Own == "" {
		c.Status = Warning
		c.Message = "the namespace nsman runs in is not known: this is no pod, and no installed nsman CronJob was found"
		if n.Problem != "" {
			c.Message += " (" + n.Problem + ")"
		}
		c.Fix = "install nsman (docs/helm.md), or name its CronJob with --config-from NAMESPACE/NAME"
	} else {
		c.Message = "nsman runs in " + n.Own + " (" + n.From + "), which is protected"
		if slices.Contains(n.Trusted, n.Own) {
			c.Message += " and trusted"
		}
	}
	// Whoever may create a missing trusted namespace gets trusted managers
	// and rules with it: a failure, not a warning. A list by name each: a
	// sweep's RBAC has list, not get.
	var missing []string
	for _, ns := range n.Trusted {
		list, err := kube.CoreV1().Namespaces().List(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + ns})
		if err != nil {
			c.Details = append(c.Details, "whether trusted namespace "+ns+" exists could not be told: "+err.Error())
			continue
		}
		if len(list.Items) == 0 {
			c.Details = append(c.Details, "trusted namespace "+ns+" does not exist: whoever may create namespaces may create it, and its managers and rules would be trusted")
			missing = append(missing, ns)
			c.Status = Failed
			c.Fix = "create the trusted namespaces that do not exist, so that they are yours, or leave them out of --trusted-namespaces"
		}
	}
	if len(missing) > 0 {
		c.Message = "trusted namespace(s) that do not exist: " + strings.Join(missing, ", ") + "; " + c.Message
	}
	return c
}

func webhooks(allow *webhook.AllowList) Check {
	platform, tenant := allow.Policy()
	return Check{
		Name:    "webhooks",
		Status:  OK,
		Message: "where WEBHOOK actions and notifications may go",
		Details: []string{
			"trusted managers, rules and notifications: " + platform,
			"tenants' managers: " + tenant,
		},
	}
}

// javaOperatorDeployment is the Java operator's Deployment, as its
// manifest names it.
const javaOperatorDeployment = "namespace-manager-operator"

// javaOperator fails while the operator nsman replaces runs: both would
// act on the same managers.
func javaOperator(ctx context.Context, kube kubernetes.Interface) Check {
	c := Check{Name: "javaOperator"}
	list, err := kube.AppsV1().Deployments("").List(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + javaOperatorDeployment})
	if err != nil {
		c.Status, c.Message = Warning, "whether the Java operator runs could not be told: "+err.Error()
		return c
	}
	for _, d := range list.Items {
		where := d.Namespace + "/" + d.Name
		if d.Spec.Replicas == nil || *d.Spec.Replicas > 0 {
			c.Status = Failed
			c.Message = "the Java operator's Deployment " + where + " runs: it and nsman would act on the same managers"
			c.Fix = "stop it first: kubectl -n " + d.Namespace + " scale deployment " + d.Name + " --replicas=0 (docs/migrating.md)"
			return c
		}
		c.Details = append(c.Details, "Deployment "+where+" is scaled to zero: remove the operator's objects (docs/migrating.md#removing-the-operator)")
	}
	c.Status, c.Message = OK, "the Java operator (Deployment "+javaOperatorDeployment+") does not run"
	return c
}

// cronJob says whether the installed CronJob sweeps: its ServiceAccount
// exists, it is not suspended, its sweeps act (no --dry-run), and the last
// one scheduled succeeded.
func cronJob(ctx context.Context, kube kubernetes.Interface, installed *Installed) Check {
	c := Check{Name: "cronJob", Status: OK}
	if installed == nil {
		c.Message = "no installed CronJob looked at (in its pod, or none found)"
		return c
	}
	cj := installed.CronJob
	c.Message = "CronJob " + cj.Namespace + "/" + cj.Name + " runs " + installed.Image + " on the schedule \"" + cj.Spec.Schedule + "\""
	worse := func(s Status, detail, fix string) {
		c.Details = append(c.Details, detail)
		if s == Failed || c.Status == OK {
			c.Status, c.Fix = s, fix
		}
	}
	if _, err := kube.CoreV1().ServiceAccounts(cj.Namespace).Get(ctx, installed.ServiceAccount, metav1.GetOptions{}); apierrors.IsNotFound(err) {
		worse(Failed, "its ServiceAccount "+installed.serviceAccount()+" does not exist: its pods are not created", "create the ServiceAccount, or reinstall nsman")
	}
	if cj.Spec.Suspend != nil && *cj.Spec.Suspend {
		worse(Warning, "suspended: no sweep starts", "resume it: suspend: false (the chart's suspend value)")
	}
	if installed.DryRun {
		worse(Warning, "every sweep is a dry run (--dry-run): it acts on nothing and logs what it would do", "when its plan is what you expect, let it act: the chart's dryRun=false, or kubectl apply -k deploy/")
	}
	last, ok := cj.Status.LastScheduleTime, cj.Status.LastSuccessfulTime
	switch {
	case last == nil:
		c.Details = append(c.Details, "no sweep has started yet")
	case (ok == nil || ok.Before(last)) && time.Since(last.Time) > deadline(cj):
		worse(Warning, "the last sweep, started "+last.UTC().Format(time.RFC3339)+", has not succeeded (last success: "+timeOrNever(ok)+")", "read the logs of its Jobs' pods in "+cj.Namespace+" (docs/operating.md#logs)")
	case ok == nil || ok.Before(last):
		c.Details = append(c.Details, "a sweep started "+last.UTC().Format(time.RFC3339)+" and may still run")
	default:
		c.Details = append(c.Details, "the last sweep started "+last.UTC().Format(time.RFC3339)+" and succeeded")
	}
	return c
}

// deadline is how long a sweep's Job may run (its activeDeadlineSeconds,
// else the 300 s deploy/ and the chart set): one not done by then failed.
func deadline(cj *batchv1.CronJob) time.Duration {
	if s := cj.Spec.JobTemplate.Spec.ActiveDeadlineSeconds; s != nil {
		return time.Duration(*s) * time.Second
	}
	return 300 * time.Second
}

func timeOrNever(t *metav1.Time) string {
	if t == nil {
		return "never"
	}
	return t.UTC().Format(time.RFC3339)
}

// admissionPolicy says whether a ValidatingAdmissionPolicy, bound to deny,
// fences serviceAccount ("namespace/name") as deploy/ and the chart's does:
// its matchConditions name the ServiceAccount's user.
func admissionPolicy(ctx context.Context, kube kubernetes.Interface, serviceAccount string) Check {
	c := Check{Name: "admissionPolicy", Status: OK}
	ns, name, ok := strings.Cut(serviceAccount, "/")
	if !ok {
		c.Message = "not looked at: the ServiceAccount a sweep runs as is not known here (in its pod, or no CronJob found)"
		return c
	}
	user := "system:serviceaccount:" + ns + ":" + name
	policies, err := kube.AdmissionregistrationV1().ValidatingAdmissionPolicies().List(ctx, metav1.ListOptions{})
	if err != nil {
		c.Status, c.Message = Warning, "whether an admission policy fences "+user+" could not be told: "+err.Error()
		return c
	}
	bindings, err := kube.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().List(ctx, metav1.ListOptions{})
	if err != nil {
		c.Status, c.Message = Warning, "whether an admission policy fences "+user+" could not be told: "+err.Error()
		return c
	}
	fencing := map[string]bool{}
	for _, p := range policies.Items {
		for _, m := range p.Spec.MatchConditions {
			if strings.Contains(m.Expression, "'"+user+"'") {
				fencing[p.Name] = true
			}
		}
	}
	for _, b := range bindings.Items {
		if fencing[b.Spec.PolicyName] && slices.Contains(b.Spec.ValidationActions, admissionregistrationv1.Deny) {
			c.Message = "the ValidatingAdmissionPolicy " + b.Spec.PolicyName + " (binding " + b.Name + ", Deny) fences " + user
			return c
		}
	}
	c.Status = Warning
	c.Message = "no ValidatingAdmissionPolicy bound to deny fences " + user + ": only RBAC, which lets it delete any namespace and patch any Deployment, stands between it and what nsman protects"
	c.Fix = "install nsman's admission policy: the chart's admissionPolicy.enabled=true, or deploy/base/admission-policy.yaml (docs/safety.md#a-fence-around-nsman-itself)"
	return c
}
