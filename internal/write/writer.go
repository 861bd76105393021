package write

import (
	"context"
	"encoding/json"
	"io"
	"strings"

	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/nsman/nsman/policy"
	"github.com/nsman/nsman/report"
	"github.com/nsman/nsman/webhook"
)

// Writer is the seam every mutating request goes through. The sweep
// decides, records and reports the same way in a dry run; only the Writer
// differs, whose requests go nowhere and whose actions are planned, not
// fired (and so tell no notification).
type Writer interface {
	// Done is the state of an action carried out through the writer.
	Done() report.State
	// PatchManager applies a patch to a NamespaceManager or, with a
	// subresource, to its status.
	PatchManager(ctx context.Context, namespace, name string, patch Patch) error
	// PatchNamespace applies a patch to a Namespace (a rule's record of it
	// is an annotation there, and a hold too).
	PatchNamespace(ctx context.Context, name string, patch Patch) error
	// DeleteNamespace deletes the namespace if it still has uid and, when
	// resourceVersion is set, that version.
	DeleteNamespace(ctx context.Context, name string, uid types.UID, resourceVersion string) error
	// DeleteOwner deletes the owner of a namespace (a DELETE via owner) if
	// it still has uid, with foreground propagation: it goes once what it
	// owns is gone.
	DeleteOwner(ctx context.Context, resource schema.GroupVersionResource, namespace, name string, uid types.UID) error
	// PatchWorkload applies a JSON merge patch to a Deployment or StatefulSet.
	PatchWorkload(ctx context.Context, resource schema.GroupVersionResource, namespace, name string, patch []byte) error
	// Post delivers a webhook.
	Post(ctx context.Context, url string, body []byte, idempotencyKey string) error
	// Deliver delivers a WEBHOOK action's request, reached as route says.
	Deliver(ctx context.Context, route webhook.Route, url string, body []byte, idempotencyKey string) (webhook.Delivery, error)
	// Silent returns the error a delivery to url in scope would be
	// deferred with now, or nil.
	Silent(scope, url string) error
	// Event writes an Event.
	Event(ctx context.Context, ev *eventsv1.Event) error
}

// New is a Writer through the clients (webhooks through sender), or
// with dryRun one that writes nothing.
func New(kube kubernetes.Interface, dyn dynamic.Interface, managers rest.Interface, sender *webhook.Sender, dryRun bool) Writer {
	if dryRun {
		return dryRunWriter{}
	}
	return &apiWriter{kube: kube, dynamic: dyn, managers: managers, webhook: sender}
}

// apiWriter sends the requests.
type apiWriter struct {
	kube     kubernetes.Interface
	dynamic  dynamic.Interface
	managers rest.Interface
	webhook  *webhook.Sender
}

// PatchManager leaves the manager the API server answers with undecoded:
// nothing reads it, and decoding it was most of what a patch cost nsman.
func (w *apiWriter) PatchManager(ctx context.Context, namespace, name string, patch Patch) error {
	req := w.managers.Patch(patch.Type()).Namespace(namespace).Resource(policy.Resource).Name(name)
	if patch.Subresource != "" {
		req = req.SubResource(patch.Subresource)
	}
	return req.Body(patch.Body).Do(ctx).Error()
}

func (w *apiWriter) Done() report.State { return report.StateFired }

func (w *apiWriter) PatchNamespace(ctx context.Context, name string, patch Patch) error {
	_, err := w.kube.CoreV1().Namespaces().Patch(ctx, name, patch.Type(), patch.Body, metav1.PatchOptions{})
	return err
}

func (w *apiWriter) DeleteNamespace(ctx context.Context, name string, uid types.UID, resourceVersion string) error {
	background := metav1.DeletePropagationBackground
	opts := metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}, PropagationPolicy: &background}
	if resourceVersion == "" {
		return w.kube.CoreV1().Namespaces().Delete(ctx, name, opts)
	}
	// A DELETE as listed is sent once: client-go would send it again after
	// a 5xx that asks to retry, which may follow a DELETE done, and the
	// second would take the change the first made for someone else's.
	opts.Preconditions.ResourceVersion = &resourceVersion
	return w.kube.CoreV1().RESTClient().Delete().Resource("namespaces").Name(name).Body(&opts).MaxRetries(0).Do(ctx).Error()
}

func (w *apiWriter) DeleteOwner(ctx context.Context, resource schema.GroupVersionResource, namespace, name string, uid types.UID) error {
	foreground := metav1.DeletePropagationForeground
	opts := metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}, PropagationPolicy: &foreground}
	return w.dynamic.Resource(resource).Namespace(namespace).Delete(ctx, name, opts)
}

// PatchWorkload reads past the workload the API server answers with, never
// holding it: it is a tenant's to size (decoding the 1.1 MB answer of a
// Deployment of 7,000 containers allocated 11 MB: TestPatchWorkload), and
// nothing reads it.
func (w *apiWriter) PatchWorkload(ctx context.Context, resource schema.GroupVersionResource, namespace, name string, patch []byte) error {
	path := []string{"/apis", resource.Group, resource.Version}
	if resource.Group == "" {
		path = []string{"/api", resource.Version}
	}
	body, err := w.kube.Discovery().RESTClient().Patch(types.MergePatchType).
		AbsPath(append(path, "namespaces", namespace, resource.Resource, name)...).Body(patch).Stream(ctx)
	if err != nil {
		return err
	}
	defer body.Close()
	_, err = io.Copy(io.Discard, body)
	return err
}

func (w *apiWriter) Post(ctx context.Context, url string, body []byte, idempotencyKey string) error {
	_, err := w.webhook.Send(ctx, url, body, idempotencyKey)
	return err
}

func (w *apiWriter) Deliver(ctx context.Context, route webhook.Route, url string, body []byte, idempotencyKey string) (webhook.Delivery, error) {
	return w.webhook.Deliver(ctx, route, url, body, idempotencyKey)
}

func (w *apiWriter) Silent(scope, url string) error { return w.webhook.Silent(scope, url) }

func (w *apiWriter) Event(ctx context.Context, ev *eventsv1.Event) error {
	_, err := w.kube.EventsV1().Events(ev.Namespace).Create(ctx, ev, metav1.CreateOptions{})
	return err
}

// dryRunWriter sends nothing: a dry run makes no mutating request at all.
type dryRunWriter struct{}

func (dryRunWriter) Done() report.State                                               { return report.StatePlanned }
func (dryRunWriter) PatchManager(context.Context, string, string, Patch) error        { return nil }
func (dryRunWriter) PatchNamespace(context.Context, string, Patch) error              { return nil }
func (dryRunWriter) DeleteNamespace(context.Context, string, types.UID, string) error { return nil }
func (dryRunWriter) DeleteOwner(context.Context, schema.GroupVersionResource, string, string, types.UID) error {
	return nil
}
func (dryRunWriter) PatchWorkload(context.Context, schema.GroupVersionResource, string, string, []byte) error {
	return nil
}
func (dryRunWriter) Post(context.Context, string, []byte, string) error { return nil }
func (dryRunWriter) Deliver(context.Context, webhook.Route, string, []byte, string) (webhook.Delivery, error) {
	return webhook.Delivery{}, nil
}
func (dryRunWriter) Silent(string, string) error                  { return nil }
func (dryRunWriter) Event(context.Context, *eventsv1.Event) error { return nil }

// Patch is one patch of a manager (its status with subresource
// "status") or a namespace: a JSON merge patch, or an RFC 6902 JSON patch.
type Patch struct {
	Subresource string
	JSON        bool
	Body        []byte
}

func (p Patch) Type() types.PatchType {
	if p.JSON {
		return types.JSONPatchType
	}
	return types.MergePatchType
}

func MustJSON(v any) string {
	data, err := json.Marshal(v)
	if err != nil {
		panic(err) // only plain structs and maps are marshalled
	}
	return string(data)
}

// PatchOp is one operation of an RFC 6902 JSON patch.
type PatchOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value"`
}

// JSONPatch is the JSON patch of ops, of the subresource when it is set.
func JSONPatch(subresource string, ops ...PatchOp) Patch {
	return Patch{Subresource: subresource, JSON: true, Body: []byte(MustJSON(ops))}
}

// AnnotationPointer is the JSON pointer to annotation key, for a JSON patch.
func AnnotationPointer(key string) string {
	return "/metadata/annotations/" + strings.ReplaceAll(key, "/", "~1")
}
