package nsmantest

import (
	"context"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nsman/nsman/cmd"
	nsmancluster "github.com/nsman/nsman/internal/cluster"
	"github.com/nsman/nsman/serve"
	"github.com/nsman/nsman/test/cluster"
)

// Serve is nsman serve, running for a test on loopback.
type Serve struct {
	// URL is where it listens, which its links point to.
	URL string
	// Key signs its links.
	Key []byte
	// User is its ServiceAccount's user name in the audit log.
	User string
	// Home is the namespace of its ServiceAccount, nsman-serve: one of its
	// own, which outlives the namespace it answers links to.
	Home string
}

// StartServe runs nsman serve until t ends, as a ServiceAccount of a
// namespace of its own that may read and patch namespace ns alone, with
// --user-header X-Forwarded-Email and --links-url its own URL. Not a
// ServiceAccount of ns: a test that deletes ns would delete it, and its
// token would stop authenticating once the API server's token cache (10 s)
// forgot it.
func StartServe(t testing.TB, c *cluster.Cluster, ns string) *Serve {
	t.Helper()
	ctx := t.Context()
	name := "nsman-serve-" + ns
	home := c.Namespace(t)
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"namespaces"}, ResourceNames: []string{ns}, Verbs: []string{"get", "patch"}}}}
	if _, err := c.Admin.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name}, RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: home, Name: "nsman-serve"}}}
	if _, err := c.Admin.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = c.Admin.RbacV1().ClusterRoleBindings().Delete(context.Background(), name, metav1.DeleteOptions{})
		_ = c.Admin.RbacV1().ClusterRoles().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	cfg, err := c.ServiceAccountConfig(ctx, home, "nsman-serve")
	if err != nil {
		t.Fatal(err)
	}
	clients, err := cmd.NewClients(cfg, nsmancluster.NewAPIObserver(nil))
	if err != nil {
		t.Fatal(err)
	}
	s := &Serve{Key: []byte("a key for the links of " + ns), User: cluster.ServiceAccountUser(home, "nsman-serve"), Home: home}
	keyFile := filepath.Join(t.TempDir(), "links-key")
	if err := os.WriteFile(keyFile, s.Key, 0o600); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.URL = "http://" + ln.Addr().String()
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	srv, err := serve.New(serve.Config{KeyFile: keyFile, BaseURL: s.URL, MaxHold: 30 * 24 * time.Hour, UserHeader: "X-Forwarded-Email", Clients: clients, Log: log})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(runCtx, ln) }()
	t.Cleanup(func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("nsman serve: %v", err)
		}
	})
	return s
}

// NamespaceWrites are the writes of user to namespace ns in the audit log.
func NamespaceWrites(t testing.TB, c *cluster.Cluster, user, ns string) []cluster.Request {
	t.Helper()
	reqs, err := c.AuditedRequests(t.Context(), user)
	if err != nil {
		t.Fatal(err)
	}
	var writes []cluster.Request
	for _, r := range reqs {
		if r.Verb != "get" && r.Verb != "list" && r.Verb != "watch" && r.Resource == "namespaces" && r.Name == ns {
			writes = append(writes, r)
		}
	}
	return writes
}
