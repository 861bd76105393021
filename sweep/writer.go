package sweep

import (
	"context"

	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nsman/nsman/report"
	"github.com/nsman/nsman/webhook"
)

// writer is the seam every mutating request goes through. The sweep
// decides, records and reports the same way in a dry run; only the writer
// differs, whose requests go nowhere and whose actions are planned, not
// fired (and so tell no notification).
type writer interface {
	// done is the state of an action carried out through the writer.
	done() report.State
	// patchManager applies a patch to a NamespaceManager or, with a
	// subresource, to its status.
	patchManager(ctx context.Context, namespace, name string, patch apiPatch) error
	// patchNamespace applies a patch to a Namespace (a rule's record of it
	// is an annotation there, and a hold too).
	patchNamespace(ctx context.Context, name string, patch apiPatch) error
	// deleteNamespace deletes the namespace if it still has uid and, when
	// resourceVersion is set, that version.
	deleteNamespace(ctx context.Context, name string, uid types.UID, resourceVersion string) error
	// patchWorkload applies a JSON merge patch to a Deployment or StatefulSet.
	patchWorkload(ctx context.Context, resource schema.GroupVersionResource, namespace, name string, patch []byte) error
	// post delivers a webhook.
	post(ctx context.Context, url string, body []byte, idempotencyKey string) error
	// deliver delivers a WEBHOOK action's request, reached as route says.
	deliver(ctx context.Context, route webhook.Route, url string, body []byte, idempotencyKey string) (webhook.Delivery, error)
	// silent returns the error a delivery to url in scope would be
	// deferred with now, or nil.
	silent(scope, url string) error
	// event writes an Event.
	event(ctx context.Context, ev *eventsv1.Event) error
}

// newWriter is a writer through clients (webhooks through sender), or with
// dryRun one that writes nothing.
func newWriter(clients Clients, sender *webhook.Sender, dryRun bool) writer {
	if dryRun {
		return dryRunWriter{}
	}
	return &apiWriter{clients: clients, webhook: sender}
}

// apiWriter sends the requests.
type apiWriter struct {
	clients Clients
	webhook *webhook.Sender
}

// patchManager leaves the manager the API server answers with undecoded:
// nothing reads it, and decoding it was most of what a patch cost nsman.
func (w *apiWriter) patchManager(ctx context.Context, namespace, name string, patch apiPatch) error {
	req := w.clients.Managers.Patch(patch.patchType()).Namespace(namespace).Resource(ManagerResource.Resource).Name(name)
	if patch.subresource != "" {
		req = req.SubResource(patch.subresource)
	}
	return req.Body(patch.body).Do(ctx).Error()
}

func (w *apiWriter) done() report.State { return report.StateFired }

func (w *apiWriter) patchNamespace(ctx context.Context, name string, patch apiPatch) error {
	_, err := w.clients.Kube.CoreV1().Namespaces().Patch(ctx, name, patch.patchType(), patch.body, metav1.PatchOptions{})
	return err
}

func (w *apiWriter) deleteNamespace(ctx context.Context, name string, uid types.UID, resourceVersion string) error {
	background := metav1.DeletePropagationBackground
	opts := metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}, PropagationPolicy: &background}
	if resourceVersion == "" {
		return w.clients.Kube.CoreV1().Namespaces().Delete(ctx, name, opts)
	}
	// A DELETE as listed is sent once: client-go would send it again after
	// a 5xx that asks to retry, which may follow a DELETE done, and the
	// second would take the change the first made for someone else's.
	opts.Preconditions.ResourceVersion = &resourceVersion
	return w.clients.Kube.CoreV1().RESTClient().Delete().Resource("namespaces").Name(name).Body(&opts).MaxRetries(0).Do(ctx).Error()
}

func (w *apiWriter) patchWorkload(ctx context.Context, resource schema.GroupVersionResource, namespace, name string, patch []byte) error {
	_, err := w.clients.Dynamic.Resource(resource).Namespace(namespace).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
	return err
}

func (w *apiWriter) post(ctx context.Context, url string, body []byte, idempotencyKey string) error {
	_, err := w.webhook.Send(ctx, url, body, idempotencyKey)
	return err
}

func (w *apiWriter) deliver(ctx context.Context, route webhook.Route, url string, body []byte, idempotencyKey string) (webhook.Delivery, error) {
	return w.webhook.Deliver(ctx, route, url, body, idempotencyKey)
}

func (w *apiWriter) silent(scope, url string) error { return w.webhook.Silent(scope, url) }

func (w *apiWriter) event(ctx context.Context, ev *eventsv1.Event) error {
	_, err := w.clients.Kube.EventsV1().Events(ev.Namespace).Create(ctx, ev, metav1.CreateOptions{})
	return err
}

// dryRunWriter sends nothing: a dry run makes no mutating request at all.
type dryRunWriter struct{}

func (dryRunWriter) done() report.State                                               { return report.StatePlanned }
func (dryRunWriter) patchManager(context.Context, string, string, apiPatch) error     { return nil }
func (dryRunWriter) patchNamespace(context.Context, string, apiPatch) error           { return nil }
func (dryRunWriter) deleteNamespace(context.Context, string, types.UID, string) error { return nil }
func (dryRunWriter) patchWorkload(context.Context, schema.GroupVersionResource, string, string, []byte) error {
	return nil
}
func (dryRunWriter) post(context.Context, string, []byte, string) error { return nil }
func (dryRunWriter) deliver(context.Context, webhook.Route, string, []byte, string) (webhook.Delivery, error) {
	return webhook.Delivery{}, nil
}
func (dryRunWriter) silent(string, string) error                  { return nil }
func (dryRunWriter) event(context.Context, *eventsv1.Event) error { return nil }
