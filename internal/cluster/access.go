package cluster

import (
	"context"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
)

// MayPatchEverywhere reports whether the caller may patch resource's
// objects in every namespace, as one SelfSubjectAccessReview answers. The
// review is cluster-wide because deploy/base and the chart grant nsman its
// kinds by a ClusterRoleBinding: a namespace's RoleBinding grants no sweep
// anything. Every authenticated user may create the review (Kubernetes'
// system:basic-user), so it is no permission of cluster.Permissions; its
// answer is the spec sent and a verdict, a few hundred bytes.
func MayPatchEverywhere(ctx context.Context, kube kubernetes.Interface, resource schema.GroupVersionResource) (bool, error) {
	r, err := kube.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
		Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
			Verb: "patch", Group: resource.Group, Version: resource.Version, Resource: resource.Resource,
		}},
	}, metav1.CreateOptions{})
	if err != nil {
		return false, err
	}
	return r.Status.Allowed, nil
}
