package doctor

import (
	"context"
	"fmt"
	"slices"
	"strings"

	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/nsman/nsman/internal/owner"
)

// ownerKinds says which kinds of the objects that own namespaces (Argo
// CD's Application, Flux's Kustomization and HelmRelease) nsman can see:
// for each, whether the API server serves it (discovery) and whether nsman
// may list it (an access review, as permissions asks). A kind not
// installed is said so and is no fault: OWNER_GONE then finds no owner of
// that kind gone.
func ownerKinds(ctx context.Context, kube kubernetes.Interface, serviceAccount string, inPod bool) Check {
	c := Check{Name: "ownerKinds", Status: OK}
	r := newReviewer(ctx, kube, serviceAccount, inPod)
	var seen, absent, unseen, untold []string
	for _, k := range owner.Kinds() {
		name := k.Name + " (" + k.Ref() + "/" + k.Resource.Version + ")"
		served, err := servesResource(kube, k)
		if err != nil {
			c.Details = append(c.Details, name+": whether it is served could not be told: "+err.Error())
			untold = append(untold, k.Name)
			continue
		}
		if !served {
			c.Details = append(c.Details, name+": not installed")
			absent = append(absent, k.Name)
			continue
		}
		may, err := r.allowed(&authorizationv1.ResourceAttributes{Verb: "list", Group: k.Resource.Group, Resource: k.Resource.Resource})
		switch {
		case err != nil:
			c.Details = append(c.Details, name+": served; whether "+r.who+" may list it could not be reviewed: "+err.Error())
			untold = append(untold, k.Name)
		case !may:
			c.Details = append(c.Details, name+": served, but "+r.who+" may not list it")
			unseen = append(unseen, k.Name)
		default:
			c.Details = append(c.Details, name+": served, and "+r.who+" may list it; "+mayDelete(r, k))
			seen = append(seen, k.Name)
		}
	}
	c.Details = appendNonEmpty(c.Details, r.fellBack)
	c.Message = ownerKindsMessage(r.who, seen, absent, unseen, untold)
	switch {
	case r.notNsman && len(seen)+len(unseen) > 0:
		c.Status, c.Fix = Warning, notNsmanFix
	case len(unseen) > 0:
		c.Status = Warning
		c.Fix = "grant " + r.who + " get and list on them, cluster-wide, as nsman's ClusterRole does (deploy/base/rbac.yaml, or the chart's); until then OWNER_GONE cannot tell whether their owners exist and deletes nothing by them"
	case len(untold) > 0:
		c.Status = Warning
		c.Fix = "run nsman doctor again once the API server answers (the details say what failed); meanwhile OWNER_GONE may not tell whether their owners exist, and deletes nothing by them"
	}
	return c
}

// mayDelete says whether r's subject may delete objects of kind k, which
// only a DELETE via owner does (cluster.OptionalPermissions): no fault
// either way.
func mayDelete(r *reviewer, k owner.Kind) string {
	may, err := r.allowed(&authorizationv1.ResourceAttributes{Verb: "delete", Group: k.Resource.Group, Resource: k.Resource.Resource})
	switch {
	case err != nil:
		return "whether " + r.who + " may delete it (DELETE via owner) could not be reviewed: " + err.Error()
	case !may:
		return r.who + " may not delete it: a DELETE via owner fails until granted (" + owner.DeleteGrant + ")"
	}
	return r.who + " may delete it (DELETE via owner)"
}

// ownerKindsMessage says which owner kinds who can see, which who cannot,
// which could not be told and which are not installed.
func ownerKindsMessage(who string, seen, absent, unseen, untold []string) string {
	var parts []string
	if len(seen) > 0 {
		parts = append(parts, fmt.Sprintf("%s can see %s", who, strings.Join(seen, ", ")))
	}
	if len(unseen) > 0 {
		parts = append(parts, fmt.Sprintf("%s cannot see %s", who, strings.Join(unseen, ", ")))
	}
	if len(untold) > 0 {
		parts = append(parts, "could not tell of "+strings.Join(untold, ", "))
	}
	if len(absent) > 0 {
		parts = append(parts, "not installed: "+strings.Join(absent, ", "))
	}
	return fmt.Sprintf("owner kinds (OWNER_GONE): %s", strings.Join(parts, "; "))
}

// servesResource reports whether discovery finds k's resource at its
// group and version; a group version not served is false, not an error.
func servesResource(kube kubernetes.Interface, k owner.Kind) (bool, error) {
	list, err := kube.Discovery().ServerResourcesForGroupVersion(k.Resource.GroupVersion().String())
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return slices.ContainsFunc(list.APIResources, func(r metav1.APIResource) bool { return r.Name == k.Resource.Resource }), nil
}
