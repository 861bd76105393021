package sweep

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/util/retry"

	"github.com/nsman/nsman/policy"
)

// Restore undoes SCALE_DOWN in namespace: every Deployment and StatefulSet
// that carries ReplicasAnnotation and still has zero replicas gets its
// recorded count back, and the record is removed. A workload scaled by
// someone else since is left alone. It returns what it did, or with dryRun
// what it would do.
func Restore(ctx context.Context, clients Clients, namespace string, dryRun bool) ([]string, error) {
	var w writer = &apiWriter{clients: clients}
	if dryRun {
		w = dryRunWriter{}
	}
	var (
		effects []string
		errs    []error
	)
	for _, kind := range []string{policy.KindDeployment, policy.KindStatefulSet} {
		resource := workloadResources[kind]
		list, err := clients.Dynamic.Resource(resource).Namespace(namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return effects, fmt.Errorf("list %s in %s: %w", resource.Resource, namespace, err)
		}
		for i := range list.Items {
			effect, err := restoreOne(ctx, clients, w, resource, kind, &list.Items[i])
			if err != nil {
				errs = append(errs, err)
			}
			if effect != "" {
				effects = append(effects, effect)
			}
		}
	}
	return effects, errors.Join(errs...)
}

func restoreOne(ctx context.Context, clients Clients, w writer, resource schema.GroupVersionResource, kind string, obj *unstructured.Unstructured) (string, error) {
	var effect string
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		recorded, ok := obj.GetAnnotations()[ReplicasAnnotation]
		if !ok {
			effect = ""
			return nil
		}
		id := kind + "/" + obj.GetName()
		replicas, err := strconv.ParseInt(recorded, 10, 32)
		if err != nil || replicas < 0 {
			return fmt.Errorf("%s: annotation %s=%q is not a replica count", id, ReplicasAnnotation, recorded)
		}
		if current := specReplicas(obj); current != 0 {
			effect = fmt.Sprintf("leave %s at %d replicas: scaled since nsman scaled it down", id, current)
			return nil
		}
		patch := mustJSON(map[string]any{
			"metadata": map[string]any{"resourceVersion": obj.GetResourceVersion(), "annotations": map[string]any{ReplicasAnnotation: nil}},
			"spec":     map[string]any{"replicas": replicas},
		})
		effect = fmt.Sprintf("scale %s from 0 to %d", id, replicas)
		err = w.patchWorkload(ctx, resource, obj.GetNamespace(), obj.GetName(), []byte(patch))
		if apierrors.IsConflict(err) {
			fresh, getErr := clients.Dynamic.Resource(resource).Namespace(obj.GetNamespace()).Get(ctx, obj.GetName(), metav1.GetOptions{})
			if getErr != nil {
				return getErr
			}
			*obj = *fresh
		}
		return err
	})
	if err != nil {
		return "", fmt.Errorf("restore %s %s/%s: %w", kind, obj.GetNamespace(), obj.GetName(), err)
	}
	return effect, nil
}
