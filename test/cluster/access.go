package cluster

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
)

// ServiceAccountUser is the user name the API server gives a ServiceAccount,
// as it appears in the audit log and in RBAC subjects.
func ServiceAccountUser(namespace, name string) string {
	return "system:serviceaccount:" + namespace + ":" + name
}

// ServiceAccountConfig returns a client config that authenticates as the
// ServiceAccount namespace/name with a token from the TokenRequest API,
// creating the ServiceAccount when it does not exist. It has only the
// permissions that RBAC grants that ServiceAccount.
func (c *Cluster) ServiceAccountConfig(ctx context.Context, namespace, name string) (*rest.Config, error) {
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
	if _, err := c.Admin.CoreV1().ServiceAccounts(namespace).Create(ctx, sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("create service account %s/%s: %w", namespace, name, err)
	}
	expiry := int64(3600)
	tr, err := c.Admin.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &expiry},
	}, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("request token for %s/%s: %w", namespace, name, err)
	}
	cfg := rest.AnonymousClientConfig(c.AdminConfig)
	cfg.BearerToken = tr.Status.Token
	return cfg, nil
}

// Namespace creates a namespace for t alone and deletes it when t ends. Tests
// that share a control plane stay out of each other's way by working in their
// own namespaces.
func (c *Cluster) Namespace(t testing.TB) string {
	t.Helper()
	ctx := context.Background()
	ns, err := c.Admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		GenerateName: namespacePrefix(t.Name()),
		Labels:       map[string]string{"nsman.test/test": "true"},
	}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create test namespace: %v", err)
	}
	t.Cleanup(func() {
		err := c.Admin.CoreV1().Namespaces().Delete(context.Background(), ns.Name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("delete test namespace %s: %v", ns.Name, err)
		}
	})
	return ns.Name
}

var notDNSLabel = regexp.MustCompile(`[^a-z0-9]+`)

// namespacePrefix turns a test name into a valid generateName prefix.
func namespacePrefix(testName string) string {
	p := strings.Trim(notDNSLabel.ReplaceAllString(strings.ToLower(testName), "-"), "-")
	if len(p) > 40 {
		p = strings.TrimRight(p[:40], "-")
	}
	return p + "-"
}

// WriteKubeconfig writes a kubeconfig file for cfg (host, CA and bearer
// token), for commands that take --kubeconfig.
func WriteKubeconfig(path string, cfg *rest.Config) error {
	return writeKubeconfig(path, cfg.Host, cfg.CAData, cfg.BearerToken)
}
