package sweep

import (
	"context"
	"fmt"
	"slices"
	"sync"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/pager"

	"github.com/nsman/nsman/policy"
)

// PodIndexAfter is the number of pods checks in one sweep after which the
// sweep stops asking namespace by namespace whether a pod has not succeeded
// (or failed) and lists such pods once, cluster-wide, paged and metadata
// only; a rule over more namespaces uses the lists from its first check.
// Per namespace, a check costs a request or two (the pods, then the Jobs);
// the cluster-wide list costs one per PageSize pods: at most 300 pages
// within Kubernetes' limit of 150,000 pods, and a handful in most clusters.
const PodIndexAfter = 100

// notSucceededSelector selects pods in another phase than Succeeded.
const notSucceededSelector = "status.phase!=" + string(corev1.PodSucceeded)

// podIndex holds, per namespace, the distinct label sets of the pods (and,
// in some indexes, Jobs) a check looks for, each with the words a check
// reports when it finds one.
type podIndex struct {
	once sync.Once
	err  error
	// byNamespace maps a namespace to its distinct label sets, each with
	// what a check reports: a short slice, packed, rather than a map of
	// maps, which at 10,000 namespaces cost a sweep 8 MiB of peak RSS
	// (BENCHMARKS.md).
	byNamespace map[string][]podLabels
	// listed counts the pods listed to build the sweep's index: what a
	// list of them costs (confirmer).
	listed int
	// seen dedupes label sets while the index is built.
	seen map[nsLabels]struct{}
}

type nsLabels struct {
	namespace string
	labels    packedLabels
}

// building starts building the index.
func (x *podIndex) building() {
	x.byNamespace, x.seen = map[string][]podLabels{}, map[nsLabels]struct{}{}
}

// built ends the building: what dedupes it goes.
func (x *podIndex) built() { x.seen = nil }

type podLabels struct {
	what   string
	labels packedLabels
}

// find returns what the index holds in namespace matching selector.
func (x *podIndex) find(namespace string, selector labels.Selector) (string, bool) {
	for _, p := range x.byNamespace[namespace] {
		if selector.Matches(p.labels) {
			return p.what, true
		}
	}
	return "", false
}

// add indexes what under namespace and label set, once per label set.
func (x *podIndex) add(namespace, what string, set map[string]string) {
	packed := packLabels("", set)
	if _, dup := x.seen[nsLabels{namespace, packed}]; dup {
		return
	}
	x.seen[nsLabels{namespace, packed}] = struct{}{}
	x.byNamespace[namespace] = append(x.byNamespace[namespace], podLabels{what: what, labels: packed})
}

// podsCheck answers the pods condition c of a policy on a namespace.
type podsCheck func(ctx context.Context, namespace string, c policy.Condition) (policy.PodsCheck, error)

// checks is a sweep's way of answering pods conditions: checkPods and
// checkFailed. With failedIndexed (a rule over more than PodIndexAfter
// namespaces), the index of failed pods and Jobs answers PODS_FAILED from
// the first check.
func (s *Sweeper) checks(r *sweepRun, failedIndexed bool) podsCheck {
	return func(ctx context.Context, namespace string, c policy.Condition) (policy.PodsCheck, error) {
		if c.Type == policy.ConditionPodsFailed {
			return s.checkFailed(ctx, r, namespace, c.PodLabels, failedIndexed)
		}
		return s.checkPods(ctx, r, namespace, c.PodLabels)
	}
}

// podIndex lists, once per sweep, the pods that have not succeeded.
func (s *Sweeper) podIndex(ctx context.Context, r *sweepRun) (*podIndex, error) {
	x := &r.pods
	x.once.Do(func() {
		x.building()
		x.err = s.eachMetadata(ctx, "pods", metav1.ListOptions{FieldSelector: notSucceededSelector}, func(m *metav1.PartialObjectMetadata) {
			x.listed++
			x.add(m.Namespace, notSucceeded(m.Name), m.Labels)
		})
		x.built()
		if x.err != nil {
			x.byNamespace = nil
			x.err = fmt.Errorf("list pods that have not succeeded: %w", x.err)
			s.log.Warn("checking pods namespace by namespace", "error", x.err.Error())
		}
	})
	return x, x.err
}

// unfinished lists, afresh and cluster-wide, the pods that have not
// succeeded (metadata only; those matching podSelector, when it is not
// empty) and the Jobs, and indexes, of those in namespaces, the pods and the
// Jobs that have not finished: every answer a PODS_SUCCEED check there
// could get. It returns how many pods and Jobs it listed too.
func (s *Sweeper) unfinished(ctx context.Context, podSelector string, namespaces map[string]bool) (x *podIndex, pods, jobs int, err error) {
	x = &podIndex{}
	x.building()
	err = s.eachMetadata(ctx, "pods", metav1.ListOptions{FieldSelector: notSucceededSelector, LabelSelector: podSelector}, func(m *metav1.PartialObjectMetadata) {
		if pods++; namespaces[m.Namespace] {
			x.add(m.Namespace, notSucceeded(m.Name), m.Labels)
		}
	})
	if err == nil {
		err = s.eachJob(ctx, func(job *batchv1.Job) {
			if jobs++; namespaces[job.Namespace] && !jobFinished(job) {
				x.add(job.Namespace, unfinishedJob(job), job.Spec.Template.Labels)
			}
		})
	}
	if err != nil {
		return nil, 0, 0, fmt.Errorf("list pods that have not succeeded and jobs: %w", err)
	}
	x.built()
	return x, pods, jobs, nil
}

// confirmer checks again, chunk by chunk, the PODS_SUCCEED checks of a
// rule's namespaces that the sweep's index let pass: namespace by namespace
// (two requests each: pods, then Jobs), or with one list of the pods that
// have not succeeded and one of the Jobs (unfinished), whichever costs
// fewer requests.
type confirmer struct {
	s *Sweeper
	// perNamespace answers checks namespace by namespace, and conditions
	// other than PODS_SUCCEED.
	perNamespace podsCheck
	// podSelector selects the pods the rule's PODS_SUCCEED policies look
	// at, when they all look at the same ones; else it is empty.
	podSelector string
	// podPages and jobPages are the pages a list of each takes: the
	// index's pages, and the Jobs counted on first need (-1 until then).
	podPages, jobPages int
	// failed: a list failed; the rest is checked namespace by namespace.
	failed bool
}

// confirmer returns the confirmer of rule m's checks that index, the
// sweep's index, let pass; perNamespace checks one namespace. Without an
// index, every check is made namespace by namespace.
func (s *Sweeper) confirmer(m policy.Manager, index *podIndex, perNamespace podsCheck) *confirmer {
	c := &confirmer{s: s, perNamespace: perNamespace, jobPages: -1, failed: index == nil}
	if index != nil {
		c.podPages = pages(index.listed, s.cfg.PageSize)
	}
	var selectors []string
	for _, p := range m.Policies {
		if p.Condition.Type == policy.ConditionPodsSucceed {
			selectors = append(selectors, labels.SelectorFromSet(p.Condition.PodLabels).String())
		}
	}
	slices.Sort(selectors)
	if selectors = slices.Compact(selectors); len(selectors) == 1 {
		c.podSelector = selectors[0]
	}
	return c
}

// checks returns how to answer the pods checks of a chunk of namespaces,
// again of which are to be checked again. A list answers for every
// namespace of the chunk, and for those only.
func (c *confirmer) checks(ctx context.Context, chunk []string, again int) podsCheck {
	perNamespace := c.perNamespace
	if c.failed || 2*again <= c.podPages+1 {
		return perNamespace
	}
	if c.jobPages < 0 {
		jobs, err := c.s.countJobs(ctx)
		if err != nil {
			c.s.log.Warn("checking pods namespace by namespace", "error", err.Error())
			c.failed = true
			return perNamespace
		}
		c.jobPages = pages(jobs, c.s.cfg.PageSize)
	}
	if 2*again <= c.podPages+c.jobPages {
		return perNamespace
	}
	want := make(map[string]bool, len(chunk))
	for _, ns := range chunk {
		want[ns] = true
	}
	x, pods, jobs, err := c.s.unfinished(ctx, c.podSelector, want)
	if err != nil {
		c.s.log.Warn("checking pods namespace by namespace", "error", err.Error())
		c.failed = true
		return perNamespace
	}
	// The next chunk's estimate: what this list took.
	c.podPages, c.jobPages = pages(pods, c.s.cfg.PageSize), pages(jobs, c.s.cfg.PageSize)
	listed := x.answers(perNamespace, nil)
	return func(ctx context.Context, namespace string, cond policy.Condition) (policy.PodsCheck, error) {
		if !want[namespace] {
			return perNamespace(ctx, namespace, cond)
		}
		return listed(ctx, namespace, cond)
	}
}

// countJobs counts the Jobs of the cluster with one request: a list of one,
// metadata only, whose remainingItemCount tells the rest.
func (s *Sweeper) countJobs(ctx context.Context) (int, error) {
	list, err := s.clients.Metadata.Resource(batchv1.SchemeGroupVersion.WithResource("jobs")).List(ctx, metav1.ListOptions{Limit: 1})
	switch {
	case err != nil:
		return 0, fmt.Errorf("count jobs: %w", err)
	case list.RemainingItemCount != nil:
		return len(list.Items) + int(*list.RemainingItemCount), nil
	case list.Continue != "":
		return 0, fmt.Errorf("count jobs: the API server did not say how many there are")
	}
	return len(list.Items), nil
}

// pages is how many list requests of pageSize objects n objects take.
func pages(n int, pageSize int64) int {
	return max(1, (n+int(pageSize)-1)/int(pageSize))
}

// answers answers PODS_SUCCEED checks from x, and other conditions with
// check. A namespace in which x holds nothing that matches passes. When x
// is the sweep's index, which cannot let a check pass (a pod may have
// started since it was listed), passed is set: the caller checks again on a
// read made after, namespace by namespace or with unfinished.
func (x *podIndex) answers(check podsCheck, passed *bool) podsCheck {
	return func(ctx context.Context, namespace string, c policy.Condition) (policy.PodsCheck, error) {
		if c.Type != policy.ConditionPodsSucceed {
			return check(ctx, namespace, c)
		}
		if what, found := x.find(namespace, labels.SelectorFromSet(c.PodLabels)); found {
			return policy.PodsCheck{NotSucceeded: 1, Example: what}, nil
		}
		if passed != nil {
			*passed = true
		}
		return policy.PodsCheck{}, nil
	}
}

// checkPods looks for one pod matching podLabels in another phase than
// Succeeded: a single request, however many pods there are. When there is
// none, it also looks for a Job whose pods match and that has not finished:
// between two of a Job's pods every existing pod may have succeeded while the
// next is yet to be created, and acting then would cut the Job short. That
// second request is made only when the check would otherwise pass.
//
// Past PodIndexAfter checks in a sweep, a pod found in the sweep's index of
// pods that have not succeeded answers without a request. The index never
// lets a check pass: a namespace it finds no such pod in is checked as
// above, so a pod started after the index was listed still holds it back.
func (s *Sweeper) checkPods(ctx context.Context, r *sweepRun, namespace string, podLabels map[string]string) (policy.PodsCheck, error) {
	selector := labels.SelectorFromSet(podLabels)
	if r.podChecks.Add(1) > PodIndexAfter {
		if x, err := s.podIndex(ctx, r); err == nil {
			if what, found := x.find(namespace, selector); found {
				return policy.PodsCheck{NotSucceeded: 1, Example: what}, nil
			}
		}
	}
	list, err := s.clients.Kube.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{
		LabelSelector: selector.String(),
		FieldSelector: notSucceededSelector,
		Limit:         1,
	})
	if err != nil {
		return policy.PodsCheck{}, fmt.Errorf("check pods in %s: %w", namespace, err)
	}
	if len(list.Items) > 0 {
		return policy.PodsCheck{NotSucceeded: 1, Example: notSucceeded(list.Items[0].Name)}, nil
	}
	jobs, err := s.clients.Kube.BatchV1().Jobs(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return policy.PodsCheck{}, fmt.Errorf("check jobs in %s: %w", namespace, err)
	}
	for _, job := range jobs.Items {
		if !jobFinished(&job) && selector.Matches(labels.Set(job.Spec.Template.Labels)) {
			return policy.PodsCheck{NotSucceeded: 1, Example: unfinishedJob(&job)}, nil
		}
	}
	return policy.PodsCheck{}, nil
}

// unfinishedJob says why a Job holds a check back.
func unfinishedJob(job *batchv1.Job) string {
	return fmt.Sprintf("job %s has not finished (%d succeeded)", job.Name, job.Status.Succeeded)
}

// notSucceeded names a pod that holds a check back. The words are the same
// whether the sweep's index or the namespace's own list found it (the index
// has no phase), so that a manager's status does not change, and cost a
// write, with the way it was checked.
func notSucceeded(pod string) string { return fmt.Sprintf("pod %s has not succeeded", pod) }

// jobFinished reports whether a Job has completed or failed for good.
func jobFinished(job *batchv1.Job) bool {
	for _, c := range job.Status.Conditions {
		if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

// eachMetadata calls fn with the metadata of every object of a core
// resource (namespaces, pods) that opts select, listed in pages of PageSize
// with client-go's pager, none fetched ahead: a sweep holds one page at a
// time. An expired continue token ends it with the error (the pager falls
// back to a full list only in List, which holds every page at once).
func (s *Sweeper) eachMetadata(ctx context.Context, resource string, opts metav1.ListOptions, fn func(*metav1.PartialObjectMetadata)) error {
	client := s.clients.Metadata.Resource(corev1.SchemeGroupVersion.WithResource(resource))
	p := pager.New(pager.SimplePageFunc(func(opts metav1.ListOptions) (runtime.Object, error) {
		return client.List(ctx, opts)
	}))
	p.PageSize = s.cfg.PageSize
	p.PageBufferSize = 0
	return p.EachListItem(ctx, opts, func(o runtime.Object) error {
		m, ok := o.(*metav1.PartialObjectMetadata)
		if !ok {
			return fmt.Errorf("unexpected %s list item %T", resource, o)
		}
		fn(m)
		return nil
	})
}

// failedSelector selects pods in phase Failed.
const failedSelector = "status.phase=" + string(corev1.PodFailed)

// checkFailed looks for a pod matching podLabels in phase Failed and, when
// there is none, for a failed Job whose pod template matches (a Job that ran
// out of time has its pods deleted, not failed): one request when a pod
// failed, two when none did.
//
// Past PodIndexAfter checks in a sweep, the sweep's index of failed pods
// and Jobs answers without a request, both ways: a pod's failure is final,
// and one that fails after the index was listed holds at the next sweep.
func (s *Sweeper) checkFailed(ctx context.Context, r *sweepRun, namespace string, podLabels map[string]string, indexed bool) (policy.PodsCheck, error) {
	selector := labels.SelectorFromSet(podLabels)
	if r.podChecks.Add(1) > PodIndexAfter || indexed {
		if x, err := s.failedIndex(ctx, r); err == nil {
			if what, found := x.find(namespace, selector); found {
				return policy.PodsCheck{Failed: 1, Example: what}, nil
			}
			return policy.PodsCheck{}, nil
		}
	}
	list, err := s.clients.Kube.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{
		LabelSelector: selector.String(),
		FieldSelector: failedSelector,
		Limit:         1,
	})
	if err != nil {
		return policy.PodsCheck{}, fmt.Errorf("check failed pods in %s: %w", namespace, err)
	}
	if len(list.Items) > 0 {
		return policy.PodsCheck{Failed: 1, Example: "pod " + list.Items[0].Name + " failed"}, nil
	}
	jobs, err := s.clients.Kube.BatchV1().Jobs(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return policy.PodsCheck{}, fmt.Errorf("check jobs in %s: %w", namespace, err)
	}
	for _, job := range jobs.Items {
		if jobFailed(&job) && selector.Matches(labels.Set(job.Spec.Template.Labels)) {
			return policy.PodsCheck{Failed: 1, Example: "job " + job.Name + " failed"}, nil
		}
	}
	return policy.PodsCheck{}, nil
}

// jobFailed reports whether a Job has failed for good.
func jobFailed(job *batchv1.Job) bool {
	for _, c := range job.Status.Conditions {
		if c.Type == batchv1.JobFailed && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

// failedIndex lists, once per sweep, the pods in phase Failed (metadata
// only) and the failed Jobs, by namespace, with the words a check reports.
func (s *Sweeper) failedIndex(ctx context.Context, r *sweepRun) (*podIndex, error) {
	x := &r.failed
	x.once.Do(func() {
		x.building()
		x.err = s.eachMetadata(ctx, "pods", metav1.ListOptions{FieldSelector: failedSelector}, func(m *metav1.PartialObjectMetadata) {
			x.add(m.Namespace, "pod "+m.Name+" failed", m.Labels)
		})
		if x.err == nil {
			x.err = s.eachJob(ctx, func(job *batchv1.Job) {
				if jobFailed(job) {
					x.add(job.Namespace, "job "+job.Name+" failed", job.Spec.Template.Labels)
				}
			})
		}
		x.built()
		if x.err != nil {
			x.byNamespace = nil
			x.err = fmt.Errorf("list failed pods and jobs: %w", x.err)
			s.log.Warn("checking for failed pods namespace by namespace", "error", x.err.Error())
		}
	})
	return x, x.err
}

// eachJob calls fn with every Job of the cluster, listed in pages of
// PageSize, one page held at a time.
func (s *Sweeper) eachJob(ctx context.Context, fn func(*batchv1.Job)) error {
	jobs := s.clients.Kube.BatchV1().Jobs("")
	p := pager.New(pager.SimplePageFunc(func(opts metav1.ListOptions) (runtime.Object, error) {
		return jobs.List(ctx, opts)
	}))
	p.PageSize, p.PageBufferSize = s.cfg.PageSize, 0
	return p.EachListItem(ctx, metav1.ListOptions{}, func(o runtime.Object) error {
		job, ok := o.(*batchv1.Job)
		if !ok {
			return fmt.Errorf("unexpected jobs list item %T", o)
		}
		fn(job)
		return nil
	})
}
