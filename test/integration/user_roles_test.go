package integration

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	nsmancluster "github.com/nsman/nsman/internal/cluster"
	"github.com/nsman/nsman/test/nsmantest"
)

// aggregateLabel is the prefix of the labels that add a ClusterRole's rules
// to a built-in user-facing role.
const aggregateLabel = "rbac.authorization.k8s.io/aggregate-to-"

// builtInGrants is what each built-in user-facing role (created by the API
// server's RBAC bootstrap, filled by kube-controller-manager's aggregation
// controller) grants on NamespaceManagers once nsman's roles are
// installed: never their status.
var builtInGrants = map[string][]string{
	"view":  {"get", "list", "watch"},
	"edit":  {"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"},
	"admin": {"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"},
}

// TestTeamsManageManagersThroughBuiltInRoles installs the ClusterRoles
// that deploy/ and the chart aggregate to the built-in roles, one install
// at a time, and checks what the users of a namespace then may do: bound
// by a RoleBinding in that namespace to edit or admin, create, read,
// change and delete its managers, but not their status, nor anything in
// another namespace; bound to view, read them and nothing more. Without
// the install, the built-in roles grant nothing on managers, so what the
// users may do is the install's doing.
func TestTeamsManageManagersThroughBuiltInRoles(t *testing.T) {
	setup(t)
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	wantBuiltInGrants(ctx, t, nil)
	for _, tc := range []struct {
		name   string
		render func(t *testing.T) []*unstructured.Unstructured
	}{
		{"kustomize deploy/", func(t *testing.T) []*unstructured.Unstructured { return kustomize(ctx, t, "deploy") }},
		// Another release name than deploy/'s objects have: the
		// chart's roles are told apart from deploy/'s.
		{"helm chart", func(t *testing.T) []*unstructured.Unstructured {
			out, err := runHelm(ctx, t, "template", "teams", chartDir, "--namespace", "teams")
			if err != nil {
				t.Fatal(err)
			}
			objs, err := nsmantest.Decode([]byte(out))
			if err != nil {
				t.Fatal(err)
			}
			return objs
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			installUserRoles(ctx, t, tc.render(t))
			wantBuiltInGrants(ctx, t, builtInGrants)
			checkTeamAccess(ctx, t)
		})
	}
}

// installUserRoles creates the ClusterRoles among objs that aggregate to
// a built-in role: one for edit and admin, one for view. Once t ends it
// deletes them and waits until the built-in roles grant nothing on
// managers again.
func installUserRoles(ctx context.Context, t *testing.T, objs []*unstructured.Unstructured) {
	t.Helper()
	var names []string
	for _, o := range objs {
		if o.GetKind() != "ClusterRole" || !slices.ContainsFunc(slices.Collect(maps.Keys(o.GetLabels())), func(l string) bool { return strings.HasPrefix(l, aggregateLabel) }) {
			continue
		}
		role := &rbacv1.ClusterRole{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(o.Object, role, true); err != nil {
			t.Fatalf("ClusterRole %s: %v", o.GetName(), err)
		}
		if _, err := shared.Admin.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		names = append(names, role.Name)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		for _, name := range names {
			if err := shared.Admin.RbacV1().ClusterRoles().Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
				t.Error(err)
			}
		}
		wantBuiltInGrants(ctx, t, nil)
	})
	if len(names) != 2 {
		t.Fatalf("ClusterRoles aggregated to a built-in role: %q, want two, for edit and for view", names)
	}
}

// wantBuiltInGrants waits until the built-in roles grant on NamespaceManagers
// what want says (nil: nothing), and fails if they do not within a
// minute. The aggregation controller updates them a moment after a
// ClusterRole labelled for them comes or goes.
func wantBuiltInGrants(ctx context.Context, t *testing.T, want map[string][]string) {
	t.Helper()
	got := map[string][]string{}
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		for _, name := range slices.Sorted(maps.Keys(builtInGrants)) {
			role, err := shared.Admin.RbacV1().ClusterRoles().Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				// The API server's RBAC bootstrap creates them: none missing.
				return false, fmt.Errorf("built-in ClusterRole %s: %w", name, err)
			}
			got[name] = managerVerbs(role.Rules)
		}
		for name, verbs := range got {
			if !slices.Equal(verbs, want[name]) {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("the built-in roles grant on namespacemanagers (and its subresources) %v, want %v: %v", got, want, err)
	}
}

// managerVerbs lists, sorted, the verbs that rules grant on
// NamespaceManagers or any of their subresources, "resource/subresource:"
// before each verb on a subresource.
func managerVerbs(rules []rbacv1.PolicyRule) []string {
	var verbs []string
	for _, r := range rules {
		if !slices.Contains(r.APIGroups, nsmancluster.ManagerResource.Group) && !slices.Contains(r.APIGroups, "*") {
			continue
		}
		for _, res := range r.Resources {
			prefix := ""
			switch {
			case res == nsmancluster.ManagerResource.Resource:
			case res == "*" || strings.HasPrefix(res, nsmancluster.ManagerResource.Resource+"/"):
				prefix = res + ":"
			default:
				continue
			}
			for _, v := range r.Verbs {
				verbs = append(verbs, prefix+v)
			}
		}
	}
	slices.Sort(verbs)
	return slices.Compact(verbs)
}

// teamStep is one request of a namespace's user on NamespaceManagers, as
// user (a dynamic client acting as that user), on the manager the user
// works on, mine, in the user's namespace own, or in another's.
type teamStep struct {
	what string
	do   func(ctx context.Context, user dynamic.NamespaceableResourceInterface, own, other, mine string) error
	// Whether edit and admin, and view, may do it.
	editor, viewer bool
}

// teamSteps run in this order: the manager's DELETE comes last.
var teamSteps = []teamStep{
	{"get a manager of its namespace", func(ctx context.Context, c dynamic.NamespaceableResourceInterface, own, _, mine string) error {
		_, err := c.Namespace(own).Get(ctx, mine, metav1.GetOptions{})
		return err
	}, true, true},
	{"list the managers of its namespace", func(ctx context.Context, c dynamic.NamespaceableResourceInterface, own, _, _ string) error {
		_, err := c.Namespace(own).List(ctx, metav1.ListOptions{})
		return err
	}, true, true},
	{"watch the managers of its namespace", func(ctx context.Context, c dynamic.NamespaceableResourceInterface, own, _, _ string) error {
		w, err := c.Namespace(own).Watch(ctx, metav1.ListOptions{TimeoutSeconds: ptr.To[int64](1)})
		if err == nil {
			w.Stop()
		}
		return err
	}, true, true},
	{"create a manager in its namespace", func(ctx context.Context, c dynamic.NamespaceableResourceInterface, own, _, mine string) error {
		_, err := c.Namespace(own).Create(ctx, managerObj(own, mine+"-created", mine+"-created", []any{ttlPolicy("in an hour", 3600, deleteAction)}), metav1.CreateOptions{})
		return err
	}, true, false},
	{"update a manager of its namespace, a status in the body", updateWithStatus, true, false},
	{"patch a manager of its namespace", func(ctx context.Context, c dynamic.NamespaceableResourceInterface, own, _, mine string) error {
		_, err := c.Namespace(own).Patch(ctx, mine, types.MergePatchType, []byte(`{"spec":{"deactivated":false}}`), metav1.PatchOptions{})
		return err
	}, true, false},
	{"patch the status of a manager of its namespace", func(ctx context.Context, c dynamic.NamespaceableResourceInterface, own, _, mine string) error {
		_, err := c.Namespace(own).Patch(ctx, mine, types.MergePatchType, []byte(`{"status":{"state":"fired"}}`), metav1.PatchOptions{}, "status")
		return err
	}, false, false},
	{"get a manager of another namespace", func(ctx context.Context, c dynamic.NamespaceableResourceInterface, _, other, mine string) error {
		_, err := c.Namespace(other).Get(ctx, mine, metav1.GetOptions{})
		return err
	}, false, false},
	{"list the managers of another namespace", func(ctx context.Context, c dynamic.NamespaceableResourceInterface, _, other, _ string) error {
		_, err := c.Namespace(other).List(ctx, metav1.ListOptions{})
		return err
	}, false, false},
	{"create a manager in another namespace", func(ctx context.Context, c dynamic.NamespaceableResourceInterface, _, other, mine string) error {
		_, err := c.Namespace(other).Create(ctx, managerObj(other, mine+"-created", mine, []any{ttlPolicy("in an hour", 3600, deleteAction)}), metav1.CreateOptions{})
		return err
	}, false, false},
	{"delete a manager of another namespace", func(ctx context.Context, c dynamic.NamespaceableResourceInterface, _, other, mine string) error {
		return c.Namespace(other).Delete(ctx, mine, metav1.DeleteOptions{})
	}, false, false},
	{"delete the managers it created (deletecollection)", func(ctx context.Context, c dynamic.NamespaceableResourceInterface, own, _, mine string) error {
		return c.Namespace(own).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: caseLabel + "=" + mine + "-created"})
	}, true, false},
	{"delete a manager of its namespace", func(ctx context.Context, c dynamic.NamespaceableResourceInterface, own, _, mine string) error {
		return c.Namespace(own).Delete(ctx, mine, metav1.DeleteOptions{})
	}, true, false},
}

// updateWithStatus replaces the manager mine, its spec changed and a
// status that says it fired in the body; the status subresource keeps
// the status out of such a write, which only nsman's sweeps make.
func updateWithStatus(ctx context.Context, c dynamic.NamespaceableResourceInterface, own, _, mine string) error {
	m, err := env.Dynamic.Resource(nsmancluster.ManagerResource).Namespace(own).Get(ctx, mine, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("read as admin: %w", err)
	}
	if err := unstructured.SetNestedField(m.Object, true, "spec", "deactivated"); err != nil {
		return err
	}
	if err := unstructured.SetNestedField(m.Object, "fired", "status", "state"); err != nil {
		return err
	}
	updated, err := c.Namespace(own).Update(ctx, m, metav1.UpdateOptions{})
	if err != nil {
		return err
	}
	if state, _, _ := unstructured.NestedString(updated.Object, "status", "state"); state != "" {
		return fmt.Errorf("the update wrote status.state %q", state)
	}
	if d, _, _ := unstructured.NestedBool(updated.Object, "spec", "deactivated"); !d {
		return errors.New("the update did not set spec.deactivated")
	}
	return nil
}

// checkTeamAccess binds users to the built-in roles in a namespace of
// their own and runs teamSteps as each: each step goes through, or is
// forbidden, as the role says.
func checkTeamAccess(ctx context.Context, t *testing.T) {
	t.Helper()
	own, other := shared.Namespace(t), shared.Namespace(t)
	for _, role := range slices.Sorted(maps.Keys(builtInGrants)) {
		t.Run(role, func(t *testing.T) {
			user := own + "-" + role
			bindUser(ctx, t, own, user, role)
			for _, ns := range []string{own, other} {
				createManager(t, managerObj(ns, user, user, []any{ttlPolicy("in an hour", 3600, deleteAction)}))
			}
			cfg := rest.CopyConfig(shared.AdminConfig)
			cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
			client, err := dynamic.NewForConfig(cfg)
			if err != nil {
				t.Fatal(err)
			}
			managers := client.Resource(nsmancluster.ManagerResource)
			for _, s := range teamSteps {
				allowed := s.viewer
				if role != "view" {
					allowed = s.editor
				}
				err := s.do(ctx, managers, own, other, user)
				switch {
				case allowed && err != nil:
					t.Errorf("%s bound to %s: %s: %v, want it done", user, role, s.what, err)
				case !allowed && !apierrors.IsForbidden(err):
					t.Errorf("%s bound to %s: %s: %v, want it forbidden", user, role, s.what, err)
				}
			}
		})
	}
}

// bindUser binds user to the ClusterRole role in namespace ns, as a
// namespace's owners are given the built-in roles.
func bindUser(ctx context.Context, t *testing.T, ns, user, role string) {
	t.Helper()
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: user},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
	}
	if _, err := shared.Admin.RbacV1().RoleBindings(ns).Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The authorizer learns of the binding a moment later: until it
	// allows what every role may, the steps would be refused for that.
	review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: user,
		ResourceAttributes: &authorizationv1.ResourceAttributes{
			Namespace: ns, Verb: "get", Group: nsmancluster.ManagerResource.Group, Resource: nsmancluster.ManagerResource.Resource,
		},
	}}
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		r, err := shared.Admin.AuthorizationV1().SubjectAccessReviews().Create(ctx, review, metav1.CreateOptions{})
		return err == nil && r.Status.Allowed, nil
	}); err != nil {
		t.Fatalf("%s bound to %s in %s may not get its managers: %v", user, role, ns, err)
	}
}
