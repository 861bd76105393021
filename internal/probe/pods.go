package probe

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/rest"

	"github.com/nsman/nsman/internal/cluster"
	"github.com/nsman/nsman/policy"
)

// PodIndexAfter is the number of pods checks in one sweep after which the
// sweep stops asking namespace by namespace (a request or two each: the
// pods, then the Jobs) and lists what the checks look for once,
// cluster-wide, paged and metadata only (one request per PageSize pods); a
// rule over more namespaces uses the lists from its first check.
const PodIndexAfter = 100

// podsQuery is what a pods condition looks for in a namespace: pods in a
// phase (or in any phase but one) whose labels match, else Jobs in a state
// whose pod template's labels match.
type podsQuery struct {
	// phase selects the pods, as a field selector.
	phase string
	// job tells the Jobs that count.
	job func(*batchv1.Job) bool
	// pod and jobWords say what a check found; answer answers with it.
	pod      func(name string) string
	jobWords func(*batchv1.Job) string
	answer   func(what string) policy.PodsCheck
	// final: what the query finds stays so (a failed pod does not run
	// again): the sweep's index, Jobs included, answers both ways; else it
	// can only hold a check back, as a pod may have started since.
	final bool
}

// notSucceededQuery answers policy.PodsNotSucceeded (PODS_SUCCEED): a pod
// that has not succeeded, or a Job that has not finished (between two of
// its pods, every pod may have succeeded while the next is yet to be
// created), holds it back.
var notSucceededQuery = podsQuery{
	phase:    "status.phase!=" + string(corev1.PodSucceeded),
	job:      func(job *batchv1.Job) bool { return !jobEnded(job, batchv1.JobComplete, batchv1.JobFailed) },
	pod:      notSucceeded,
	jobWords: unfinishedJob,
	answer:   func(what string) policy.PodsCheck { return policy.PodsCheck{NotSucceeded: 1, Example: what} },
}

// failedQuery answers policy.PodsFailed (PODS_FAILED): a pod in phase
// Failed, or a failed Job (a Job that ran out of time has its pods
// deleted, not failed).
var failedQuery = podsQuery{
	phase:    "status.phase=" + string(corev1.PodFailed),
	job:      func(job *batchv1.Job) bool { return jobEnded(job, batchv1.JobFailed) },
	pod:      func(name string) string { return "pod " + name + " failed" },
	jobWords: func(job *batchv1.Job) string { return "job " + job.Name + " failed" },
	answer:   func(what string) policy.PodsCheck { return policy.PodsCheck{Failed: 1, Example: what} },
	final:    true,
}

// unfinishedJob says why a Job holds a check back.
func unfinishedJob(job *batchv1.Job) string {
	return fmt.Sprintf("job %s has not finished (%d succeeded)", job.Name, job.Status.Succeeded)
}

// notSucceeded names a pod that holds a check back, in the same words
// whether the index (which has no phase) or a list found it: a status does
// not change, and cost a write, with the way it was checked.
func notSucceeded(pod string) string { return fmt.Sprintf("pod %s has not succeeded", pod) }

// jobEnded reports whether a Job has one of the conditions types, True.
func jobEnded(job *batchv1.Job, types ...batchv1.JobConditionType) bool {
	return slices.ContainsFunc(job.Status.Conditions, func(c batchv1.JobCondition) bool {
		return c.Status == corev1.ConditionTrue && slices.Contains(types, c.Type)
	})
}

// Check answers the pods condition c of a policy on a namespace.
type Check func(ctx context.Context, namespace string, c policy.Condition) (policy.PodsCheck, error)

// Pods answers the pods checks of one sweep: namespace by namespace, then
// from indexes it lists once. Its zero value is not ready: see NewPods.
type Pods struct {
	reads Reads
	// checked counts pods checks (see PodIndexAfter); pending indexes the
	// pods that have not succeeded, failures the failed pods and Jobs.
	checked           atomic.Int64
	pending, failures onceIndex
	// jobs holds what the checks read of each namespace's Jobs.
	jobs sweepJobs
}

// NewPods returns the pods checks of a sweep that reads with reads.
func NewPods(reads Reads) *Pods { return &Pods{reads: reads} }

// queries are the pods checks a condition's evidence asks for.
var queries = map[policy.PodsEvidence]podsQuery{policy.PodsNotSucceeded: notSucceededQuery, policy.PodsFailed: failedQuery}

// Checks answers pods conditions, each with the query its evidence names
// (see check); with failedIndexed, the index of failed pods and Jobs
// answers the checks for them from the first.
func (p *Pods) Checks(failedIndexed bool) Check {
	return func(ctx context.Context, namespace string, c policy.Condition) (policy.PodsCheck, error) {
		q, ok := queries[c.Evidence().Pods]
		if !ok {
			return policy.PodsCheck{}, fmt.Errorf("check pods in %s: a %s condition reads no pods", namespace, c.Type)
		}
		return p.check(ctx, q, namespace, c.PodLabels, failedIndexed && q.final)
	}
}

// check looks for what q looks for in namespace, matching podLabels: one
// pod (a single request, however many pods there are) and, when there is
// none, the Jobs. Past PodIndexAfter checks in a sweep, or with indexed,
// the sweep's index of q answers first.
func (p *Pods) check(ctx context.Context, q podsQuery, namespace string, podLabels map[string]string, indexed bool) (policy.PodsCheck, error) {
	selector := labels.SelectorFromSet(podLabels)
	if p.checked.Add(1) > PodIndexAfter || indexed {
		if x, err := p.index(ctx, q); err == nil {
			if what, found := x.find(namespace, selector); found {
				return q.answer(what), nil
			}
			if q.final {
				return policy.PodsCheck{}, nil
			}
		}
	}
	// Metadata only, one pod: whatever the pods hold, this reads one name.
	pods, err := p.reads.Clients.Metadata.Resource(corev1.SchemeGroupVersion.WithResource("pods")).Namespace(namespace).List(ctx,
		metav1.ListOptions{LabelSelector: selector.String(), FieldSelector: q.phase, Limit: 1})
	if err != nil {
		return policy.PodsCheck{}, fmt.Errorf("check pods in %s: %w", namespace, err)
	}
	if len(pods.Items) > 0 {
		return q.answer(q.pod(pods.Items[0].Name)), nil
	}
	jobs := p.namespaceJobs(ctx, namespace)
	if jobs.err != nil {
		return policy.PodsCheck{}, fmt.Errorf("check jobs in %s: %w", namespace, jobs.err)
	}
	if what, found := jobs.of(q).find(namespace, selector); found {
		return q.answer(what), nil
	}
	return policy.PodsCheck{}, nil
}

// MaxJobsRead is how many Jobs a sweep reads in one namespace for its pods
// checks; in a namespace that holds more, or whose Jobs' pod templates
// carry more than maxIndexBytes of distinct labels, they fail, saying so,
// and their policies wait.
const MaxJobsRead = 5000

// maxIndexBytes bounds the labels (and the words that go with them) a
// Index keeps: a tenant can give every pod or Job a label set of
// about 1 MB.
const maxIndexBytes = 16 << 20

// jobFields is what a pods check reads of a Job: a list of Jobs is decoded
// one Job at a time into it (see cluster.EachStreamed), whatever else each holds.
type jobFields struct {
	Metadata struct {
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
	} `json:"metadata"`
	Spec struct {
		Template struct {
			Metadata struct {
				Labels map[string]string `json:"labels"`
			} `json:"metadata"`
		} `json:"template"`
	} `json:"spec"`
	Status struct {
		Succeeded  int32 `json:"succeeded"`
		Conditions []struct {
			Type   batchv1.JobConditionType `json:"type"`
			Status corev1.ConditionStatus   `json:"status"`
		} `json:"conditions"`
	} `json:"status"`
}

// job is f as a Job, for the queries' predicates and words.
func (f *jobFields) job() *batchv1.Job {
	job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: f.Metadata.Name, Namespace: f.Metadata.Namespace}}
	job.Status.Succeeded = f.Status.Succeeded
	for _, c := range f.Status.Conditions {
		job.Status.Conditions = append(job.Status.Conditions, batchv1.JobCondition{Type: c.Type, Status: c.Status})
	}
	return job
}

// jobsRequest lists the Jobs of namespace (all, when empty), as JSON.
func (r Reads) jobsRequest(namespace string) func() *rest.Request {
	return func() *rest.Request {
		return r.Clients.Kube.BatchV1().RESTClient().Get().Namespace(namespace).Resource("jobs")
	}
}

// sweepJobs is what one sweep read of the Jobs of namespaces, each
// namespace once however many checks ask (a tenant's managers all target
// their own namespace); its zero value is ready.
type sweepJobs struct {
	mu          sync.Mutex
	byNamespace map[string]*jobsRead
}

// jobsRead is what a namespace's Jobs hold back or fail, per query.
type jobsRead struct {
	once                 sync.Once
	notSucceeded, failed *Index
	err                  error
}

// of is the index of what q looks for.
func (j *jobsRead) of(q podsQuery) *Index {
	if q.final {
		return j.failed
	}
	return j.notSucceeded
}

// namespaceJobs reads the Jobs of namespace once a sweep: paged, decoded
// one at a time into jobFields, at most MaxJobsRead of them and
// maxIndexBytes of labels, within Reads.NamespaceTimeout.
func (p *Pods) namespaceJobs(ctx context.Context, namespace string) *jobsRead {
	p.jobs.mu.Lock()
	if p.jobs.byNamespace == nil {
		p.jobs.byNamespace = map[string]*jobsRead{}
	}
	j := p.jobs.byNamespace[namespace]
	if j == nil {
		j = &jobsRead{}
		p.jobs.byNamespace[namespace] = j
	}
	p.jobs.mu.Unlock()
	j.once.Do(func() {
		ctx, cancel := context.WithTimeout(ctx, p.reads.NamespaceTimeout())
		defer cancel()
		j.notSucceeded, j.failed = NewIndex(), NewIndex()
		read := 0
		j.err = cluster.EachStreamed(ctx, p.reads.PageSize, metav1.ListOptions{}, p.reads.jobsRequest(namespace), func(f *jobFields) error {
			if read++; read > MaxJobsRead {
				return fmt.Errorf("more than %d Jobs in the namespace; a pods check reads no more", MaxJobsRead)
			}
			job := f.job()
			for _, q := range []podsQuery{notSucceededQuery, failedQuery} {
				if q.job(job) {
					j.of(q).Add(namespace, q.jobWords(job), f.Spec.Template.Metadata.Labels)
				}
			}
			if j.notSucceeded.size+j.failed.size > maxIndexBytes {
				return fmt.Errorf("the Jobs' pod templates carry more than %d MiB of labels; a pods check reads no more", maxIndexBytes>>20)
			}
			return nil
		})
		j.notSucceeded.seen, j.failed.seen = nil, nil
	})
	return j
}

// Index holds, per namespace, the distinct label sets of the pods
// (and Jobs' pod templates) a query found, each with the words a check
// reports when it finds one.
type Index struct {
	// byNamespace maps a namespace to its distinct label sets, packed: a
	// map of maps cost a sweep 8 MiB of peak RSS at 10,000 namespaces.
	byNamespace map[string][]foundLabels
	// pods and jobs count the objects listed (see confirmer).
	pods, jobs int
	// seen dedupes label sets while the index is built.
	seen map[nsLabels]struct{}
	// size is the bytes of labels and words held.
	size int
}

type nsLabels struct {
	namespace string
	labels    cluster.PackedLabels
}

type foundLabels struct {
	what   string
	labels cluster.PackedLabels
}

// NewIndex returns an empty index, to build with Add.
func NewIndex() *Index {
	return &Index{byNamespace: map[string][]foundLabels{}, seen: map[nsLabels]struct{}{}}
}

// find returns what the index holds in namespace matching selector.
func (x *Index) find(namespace string, selector labels.Selector) (string, bool) {
	for _, p := range x.byNamespace[namespace] {
		if selector.Matches(p.labels) {
			return p.what, true
		}
	}
	return "", false
}

// Add indexes what under namespace and label set, once per label set
// while the index is built.
func (x *Index) Add(namespace, what string, set map[string]string) {
	if x.seen == nil {
		x.seen = map[nsLabels]struct{}{}
	}
	packed := cluster.PackLabels("", set)
	if _, dup := x.seen[nsLabels{namespace, packed}]; dup {
		return
	}
	x.seen[nsLabels{namespace, packed}] = struct{}{}
	x.size += len(packed.Packed) + len(what)
	x.byNamespace[namespace] = append(x.byNamespace[namespace], foundLabels{what: what, labels: packed})
}

// listIndex lists, cluster-wide and paged, the pods q selects (metadata
// only, decoded one at a time; matching podSelector, when set) and,
// withJobs, the Jobs, and
// indexes what q looks for in the namespaces keep holds (all, when nil).
func (r Reads) listIndex(ctx context.Context, q podsQuery, podSelector string, withJobs bool, keep map[string]bool) (*Index, error) {
	x := NewIndex()
	kept := func(namespace string) bool { return keep == nil || keep[namespace] }
	opts := metav1.ListOptions{FieldSelector: q.phase, LabelSelector: podSelector}
	pods := func() *rest.Request { return r.Clients.Kube.CoreV1().RESTClient().Get().Resource("pods") }
	err := cluster.EachMetadata(ctx, r.PageSize, opts, pods, func(o *cluster.ObjectMeta) error {
		if m := &o.Metadata; kept(m.Namespace) {
			x.Add(m.Namespace, q.pod(m.Name), m.Labels)
		}
		if x.pods++; x.size > maxIndexBytes {
			return fmt.Errorf("the pods carry more than %d MiB of labels", maxIndexBytes>>20)
		}
		return nil
	})
	if err == nil && withJobs {
		// Jobs are whole objects a tenant writes: decoded one at a time,
		// of each only what a check reads.
		err = cluster.EachStreamed(ctx, r.PageSize, metav1.ListOptions{}, r.jobsRequest(metav1.NamespaceAll), func(f *jobFields) error {
			job := f.job()
			if x.jobs++; kept(job.Namespace) && q.job(job) {
				x.Add(job.Namespace, q.jobWords(job), f.Spec.Template.Metadata.Labels)
			}
			if x.size > maxIndexBytes {
				return fmt.Errorf("the pods and the Jobs' pod templates carry more than %d MiB of labels", maxIndexBytes>>20)
			}
			return nil
		})
	}
	x.seen = nil
	return x, err
}

// onceIndex is a sweep's index of one query, listed once, on first need.
type onceIndex struct {
	once sync.Once
	x    *Index
	err  error
}

// Pending returns the sweep's index of the pods that have not succeeded,
// listed once (see index).
func (p *Pods) Pending(ctx context.Context) (*Index, error) { return p.index(ctx, notSucceededQuery) }

// index returns the sweep's index of q, listed once: of pods only
// unless q is final. When listing it fails, checks are made namespace by
// namespace.
func (p *Pods) index(ctx context.Context, q podsQuery) (*Index, error) {
	o := &p.pending
	if q.final {
		o = &p.failures
	}
	o.once.Do(func() {
		o.x, o.err = p.reads.listIndex(ctx, q, "", q.final, nil)
		if o.err != nil {
			o.x, o.err = nil, fmt.Errorf("list pods (%s) for the sweep's index: %w", q.phase, o.err)
			p.reads.Log.Warn("checking pods namespace by namespace", "error", o.err.Error())
		}
	})
	return o.x, o.err
}

// Confirmer checks again, chunk by chunk, the checks of pods that have not
// succeeded (policy.PodsNotSucceeded, PODS_SUCCEED's) of a
// rule's namespaces that the sweep's index let pass: namespace by namespace
// (pods, then Jobs), or with one list of each, whichever costs fewer
// requests.
type Confirmer struct {
	reads Reads
	// perNamespace answers checks namespace by namespace, and the other
	// pods checks.
	perNamespace Check
	// podSelector selects the pods the rule's policies that check for
	// pods that have not succeeded look at, when they all look at the same
	// ones; else it is empty.
	podSelector string
	// podPages and jobPages are the pages a list of each takes (jobPages
	// -1 until counted).
	podPages, jobPages int
	// byNamespaceOnly: a list failed, or there is no index to confirm; the
	// rest is checked namespace by namespace.
	byNamespaceOnly bool
}

// Confirmer returns the confirmer of rule m's checks that index, the
// sweep's index (nil: none), let pass.
func (p *Pods) Confirmer(m policy.Manager, index *Index, perNamespace Check) *Confirmer {
	c := &Confirmer{reads: p.reads, perNamespace: perNamespace, jobPages: -1, byNamespaceOnly: index == nil}
	if index != nil {
		c.podPages = pages(index.pods, p.reads.PageSize)
	}
	var selectors []string
	for _, p := range m.Policies {
		if p.Condition.Evidence().Pods == policy.PodsNotSucceeded {
			selectors = append(selectors, labels.SelectorFromSet(p.Condition.PodLabels).String())
		}
	}
	slices.Sort(selectors)
	if selectors = slices.Compact(selectors); len(selectors) == 1 {
		c.podSelector = selectors[0]
	}
	return c
}

// Checks returns how to answer the pods checks of a chunk of namespaces,
// again of which are to be checked again. A list answers for every
// namespace of the chunk, and for those only.
func (c *Confirmer) Checks(ctx context.Context, chunk []string, again int) Check {
	perNamespace := c.perNamespace
	if c.byNamespaceOnly || 2*again <= c.podPages+1 {
		return perNamespace
	}
	if c.jobPages < 0 {
		jobs, err := c.reads.countJobs(ctx)
		if err != nil {
			c.reads.Log.Warn("checking pods namespace by namespace", "error", err.Error())
			c.byNamespaceOnly = true
			return perNamespace
		}
		c.jobPages = pages(jobs, c.reads.PageSize)
	}
	if 2*again <= c.podPages+c.jobPages {
		return perNamespace
	}
	want := make(map[string]bool, len(chunk))
	for _, ns := range chunk {
		want[ns] = true
	}
	x, err := c.reads.listIndex(ctx, notSucceededQuery, c.podSelector, true, want)
	if err != nil {
		c.reads.Log.Warn("checking pods namespace by namespace", "error", fmt.Errorf("list pods that have not succeeded and jobs: %w", err).Error())
		c.byNamespaceOnly = true
		return perNamespace
	}
	// The next chunk's estimate: what this list took.
	c.podPages, c.jobPages = pages(x.pods, c.reads.PageSize), pages(x.jobs, c.reads.PageSize)
	listed := x.Answers(perNamespace, nil)
	return func(ctx context.Context, namespace string, cond policy.Condition) (policy.PodsCheck, error) {
		if !want[namespace] {
			return perNamespace(ctx, namespace, cond)
		}
		return listed(ctx, namespace, cond)
	}
}

// countJobs counts the Jobs of the cluster with one request: a list of one,
// metadata only, whose remainingItemCount tells the rest.
func (r Reads) countJobs(ctx context.Context) (int, error) {
	list, err := r.Clients.Metadata.Resource(batchv1.SchemeGroupVersion.WithResource("jobs")).List(ctx, metav1.ListOptions{Limit: 1})
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

// Answers answers checks of pods that have not succeeded
// (policy.PodsNotSucceeded) from x, and other conditions with check. A namespace in which x holds nothing that matches passes, and
// passed is set: x being the sweep's index, the caller checks it again.
func (x *Index) Answers(check Check, passed *bool) Check {
	return func(ctx context.Context, namespace string, c policy.Condition) (policy.PodsCheck, error) {
		if c.Evidence().Pods != policy.PodsNotSucceeded {
			return check(ctx, namespace, c)
		}
		if what, found := x.find(namespace, labels.SelectorFromSet(c.PodLabels)); found {
			return notSucceededQuery.answer(what), nil
		}
		if passed != nil {
			*passed = true
		}
		return policy.PodsCheck{}, nil
	}
}
