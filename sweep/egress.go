package sweep

import (
	"context"
	"fmt"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"

	"github.com/nsman/nsman/policy"
	"github.com/nsman/nsman/webhook"
)

// A webhook goes where the trust of the namespace its manager lives in
// allows: a trusted manager or a rule (the platform team's) as the address
// policy says; a tenant's to public addresses, and to a Service of its own
// namespace with a selector, read through the API (again before every
// retry) and dialled at its ClusterIP: past nsman's network position, only
// to what the Service's endpoints are, which Kubernetes keeps from the Pods
// its selector picks (unless a tenant may write EndpointSlices; see
// docs/webhooks.md).

// serviceSuffixes are the endings of a Service's in-cluster DNS names.
var serviceSuffixes = []string{".svc.cluster.local", ".svc"}

// refusal is a webhook nsman will not send, in words a tenant may read.
type refusal struct{ reason string }

func (r *refusal) Error() string { return "refused: " + r.reason }

// unreadService is a webhook not sent because its Service could not be
// read through the API: nsman's trouble, not the receiver's, so unless it
// lasts (RBAC refused the read) it backs off nothing (see outcomeOf); the
// next sweep tries again.
type unreadService struct {
	name    string
	lasting bool
}

func (u *unreadService) Error() string { return "failed: the Service " + u.name + " could not be read" }

// scope is where manager m's webhooks are chosen (webhook.Route.Scope):
// the platform's ("") for a rule or a trusted manager, else m's namespace.
func (s *Sweeper) scope(m policy.Manager) string {
	if m.Rule != nil || slices.Contains(s.cfg.TrustedNamespaces, m.Namespace) {
		return ""
	}
	return m.Namespace
}

// route is how the webhook of manager m to rawURL may go, or a refusal.
func (s *Sweeper) route(ctx context.Context, m policy.Manager, rawURL string) (webhook.Route, error) {
	if s.scope(m) == "" {
		return webhook.Route{}, nil
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		return webhook.Route{}, &refusal{"the url does not parse"}
	}
	// The host is judged in the form it is dialled in, ASCII, or not at all.
	if err := webhook.CheckHost(u.Hostname()); err != nil {
		return webhook.Route{}, &refusal{"invalid url: " + err.Error()}
	}
	host := strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
	name, namespace, isService := serviceName(host)
	if !isService {
		return webhook.Route{Tenant: true, Scope: m.Namespace}, nil
	}
	switch {
	case name == "":
		return webhook.Route{}, &refusal{fmt.Sprintf("%s is no Service name: want <service>.<namespace>.svc[.cluster.local]", host)}
	case namespace != m.Namespace:
		return webhook.Route{}, &refusal{fmt.Sprintf("Service %s is of namespace %s: a webhook may reach Services of its manager's own namespace (%s) only", name, namespace, m.Namespace)}
	}
	port, err := urlPort(u)
	if err != nil {
		return webhook.Route{}, &refusal{err.Error()}
	}
	// unread logs why the Service could not be read, and tells the tenant
	// only that it could not.
	unread := func(err error) error {
		s.log.Warn("webhook not delivered", "manager", m.Namespace+"/"+m.Name, "error", fmt.Sprintf("read Service %s/%s: %v", namespace, name, err))
		return &unreadService{name: name, lasting: apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err)}
	}
	svc, err := s.service(ctx, namespace, name)
	if err != nil {
		return webhook.Route{}, unread(err)
	}
	if svc == nil {
		return webhook.Route{}, &refusal{fmt.Sprintf("there is no Service %s in namespace %s", name, namespace)}
	}
	ip, err := serviceAddress(svc, port)
	if err != nil {
		return webhook.Route{}, &refusal{err.Error()}
	}
	// Between attempts (a Retry-After of up to 30 s) its tenant may change
	// the Service: each retry reads it again, and goes only where the first
	// attempt could have.
	recheck := func(ctx context.Context) error {
		now, err := s.service(ctx, namespace, name)
		switch {
		case err != nil:
			return unread(err)
		case now == nil || now.UID != svc.UID:
			return &refusal{fmt.Sprintf("the Service %s was replaced since the first attempt", name)}
		}
		if again, err := serviceAddress(now, port); err != nil {
			return &refusal{"since the first attempt, " + err.Error()}
		} else if again != ip {
			return &refusal{fmt.Sprintf("the Service %s has another ClusterIP since the first attempt", name)}
		}
		return nil
	}
	return webhook.Route{Tenant: true, Scope: m.Namespace, Address: ip, Recheck: recheck}, nil
}

// service reads Service name of namespace with a list by name (RBAC grants
// list only), nil when there is none.
func (s *Sweeper) service(ctx context.Context, namespace, name string) (*corev1.Service, error) {
	list, err := s.clients.Kube.CoreV1().Services(namespace).List(ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String(),
	})
	if err != nil || len(list.Items) == 0 {
		return nil, err
	}
	return &list.Items[0], nil
}

// serviceName splits a Service's DNS name, <service>.<namespace>.svc with
// or without .cluster.local, into its parts; isService says that host ends
// as a Service's name does, and name is empty when the rest is no
// <service>.<namespace>.
func serviceName(host string) (name, namespace string, isService bool) {
	for _, suffix := range serviceSuffixes {
		rest, ok := strings.CutSuffix(host, suffix)
		if !ok {
			continue
		}
		name, namespace, ok = strings.Cut(rest, ".")
		if !ok || name == "" || namespace == "" || strings.Contains(namespace, ".") {
			return "", "", true
		}
		return name, namespace, true
	}
	return "", "", false
}

// urlPort is the port a URL names, or its scheme's.
func urlPort(u *url.URL) (int32, error) {
	if p := u.Port(); p != "" {
		n, err := strconv.ParseUint(p, 10, 16)
		if err != nil || n == 0 {
			return 0, fmt.Errorf("port %s is no TCP port", p)
		}
		return int32(n), nil
	}
	if u.Scheme == "https" {
		return 443, nil
	}
	return 80, nil
}

// serviceAddress is the ClusterIP of svc that serves port, or why none:
// only a Service with a selector, whose endpoints are its own Pods.
func serviceAddress(svc *corev1.Service, port int32) (netip.Addr, error) {
	switch {
	case svc.Spec.Type == corev1.ServiceTypeExternalName:
		return netip.Addr{}, fmt.Errorf("the Service %s is of type ExternalName: nsman dials a Service's ClusterIP only", svc.Name)
	case svc.Spec.ClusterIP == corev1.ClusterIPNone || svc.Spec.ClusterIP == "":
		return netip.Addr{}, fmt.Errorf("the Service %s is headless: it has no ClusterIP to dial", svc.Name)
	case len(svc.Spec.Selector) == 0:
		// Its endpoints are written by hand (an Endpoints object, mirrored):
		// they may point anywhere its ClusterIP then forwards to.
		return netip.Addr{}, fmt.Errorf("the Service %s has no selector: nsman dials only a Service whose endpoints Kubernetes keeps from its Pods", svc.Name)
	}
	if !slices.ContainsFunc(svc.Spec.Ports, func(p corev1.ServicePort) bool {
		return p.Port == port && (p.Protocol == "" || p.Protocol == corev1.ProtocolTCP)
	}) {
		return netip.Addr{}, fmt.Errorf("the Service %s has no TCP port %d", svc.Name, port)
	}
	ip, err := netip.ParseAddr(svc.Spec.ClusterIP)
	if err != nil {
		return netip.Addr{}, fmt.Errorf("the Service %s has no valid ClusterIP", svc.Name)
	}
	return ip, nil
}
