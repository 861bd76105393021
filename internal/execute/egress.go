package execute

import (
	"context"
	"fmt"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/nsman/nsman/internal/probe"
	"github.com/nsman/nsman/policy"
	"github.com/nsman/nsman/webhook"
)

// A webhook goes where the trust of the namespace its manager lives in
// allows: a trusted manager or a rule (the platform team's) as the address
// policy says; a tenant's to public addresses, and to a Service of its own
// namespace with a selector, read through the API (again before every
// attempt) and dialled at the ready endpoints of the Pods of that
// namespace its selector picks (not hostNetwork ones): past nsman's network
// position, only to the tenant's own Pods, whatever EndpointSlices a tenant
// may write (see docs/webhooks.md).

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
func (x *Executor) scope(m policy.Manager) string {
	if m.Rule != nil || slices.Contains(x.Trusted, m.Namespace) {
		return ""
	}
	return m.Namespace
}

// route is how the webhook of manager m to rawURL may go, or a refusal.
func (x *Executor) route(ctx context.Context, m policy.Manager, rawURL string) (webhook.Route, error) {
	if x.scope(m) == "" {
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
	endpoints := x.serviceEndpoints(m, namespace, name, port)
	eps, err := endpoints(ctx)
	if err != nil {
		return webhook.Route{}, err
	}
	return webhook.Route{Tenant: true, Scope: m.Namespace, Endpoints: eps, Recheck: endpoints}, nil
}

// serviceEndpoints reads, at each call, the endpoints manager m's webhook
// may dial for Service name of namespace at port, or a refusal.
func (x *Executor) serviceEndpoints(m policy.Manager, namespace, name string, port int32) func(ctx context.Context) ([]netip.AddrPort, error) {
	// unread logs why the Service could not be read, and tells the tenant
	// only that it could not.
	unread := func(err error) error {
		x.Log.Warn("webhook not delivered", "manager", m.Namespace+"/"+m.Name, "error", fmt.Sprintf("read Service %s/%s: %v", namespace, name, err))
		return &unreadService{name: name, lasting: apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err)}
	}
	// What it returns reads the Service and the endpoints of its own Pods that
	// serve port: first what the Service was, then, before every retry,
	// what it is now (a Retry-After may leave its tenant time to change
	// it); a Service replaced meanwhile is refused.
	var first *corev1.Service
	return func(ctx context.Context) ([]netip.AddrPort, error) {
		// Bound: one Service by name and what podEndpoints reads, within
		// the namespace read timeout (a quarter of --claim-ttl, at most 10 s).
		ctx, cancel := context.WithTimeout(ctx, probe.NamespaceTimeout(x.ClaimTTL))
		defer cancel()
		since := ""
		if first != nil {
			since = "since the first attempt, "
		}
		svc, err := x.service(ctx, namespace, name)
		switch {
		case err != nil:
			return nil, unread(err)
		case svc == nil && first == nil:
			return nil, &refusal{fmt.Sprintf("there is no Service %s in namespace %s", name, namespace)}
		case svc == nil || first != nil && svc.UID != first.UID:
			return nil, &refusal{fmt.Sprintf("the Service %s was replaced since the first attempt", name)}
		}
		sp, err := servicePort(svc, port)
		if err != nil {
			return nil, &refusal{since + err.Error()}
		}
		eps, err := x.podEndpoints(ctx, svc, sp)
		if err != nil {
			return nil, unread(err)
		}
		if len(eps) == 0 {
			return nil, &refusal{fmt.Sprintf("%sthe Service %s has no ready endpoint of a Pod it selects in namespace %s (nsman dials a tenant's Service at its own Pods only, not hostNetwork ones)", since, name, namespace)}
		}
		first = svc
		return eps, nil
	}
}

// service reads Service name of namespace with a list by name (RBAC grants
// list only), nil when there is none.
func (x *Executor) service(ctx context.Context, namespace, name string) (*corev1.Service, error) {
	list, err := x.Reads.Clients.Kube.CoreV1().Services(namespace).List(ctx, metav1.ListOptions{
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

// servicePort is the port of svc that serves port, or why none: only a
// Service with a selector, whose Pods nsman can tell.
func servicePort(svc *corev1.Service, port int32) (corev1.ServicePort, error) {
	switch {
	case svc.Spec.Type == corev1.ServiceTypeExternalName:
		return corev1.ServicePort{}, fmt.Errorf("the Service %s is of type ExternalName: nsman dials a Service's own Pods only", svc.Name)
	case len(svc.Spec.Selector) == 0:
		// Its endpoints are written by hand (an Endpoints object, mirrored):
		// no selector says which Pods are its own.
		return corev1.ServicePort{}, fmt.Errorf("the Service %s has no selector: nsman dials only the Pods a Service's selector picks", svc.Name)
	}
	i := slices.IndexFunc(svc.Spec.Ports, func(p corev1.ServicePort) bool {
		return p.Port == port && (p.Protocol == "" || p.Protocol == corev1.ProtocolTCP)
	})
	if i < 0 {
		return corev1.ServicePort{}, fmt.Errorf("the Service %s has no TCP port %d", svc.Name, port)
	}
	return svc.Spec.Ports[i], nil
}

// Bounds of the endpoints read for a tenant's webhook to its Service.
const (
	// maxEndpointSlices is the one page of the Service's EndpointSlices
	// read: the controller writes up to 100 endpoints to each.
	maxEndpointSlices = 2
	// maxEndpointChecks is how many endpoints are checked, one Pod read each.
	maxEndpointChecks = 4
	// maxEndpoints is how many checked endpoints an attempt may dial in turn.
	maxEndpoints = 2
)

// podEndpoints are the ready endpoints of svc's port sp that are Pods of
// svc's namespace its selector picks, not hostNetwork, at their own IP: an
// EndpointSlice (which a tenant allowed to write them may make by hand)
// says where to look, the Pod, read through the API, whether to dial.
// Bound: one page of maxEndpointSlices EndpointSlices, at most
// maxEndpointChecks Pods read by a metadata-only list of at most one each,
// within the caller's deadline.
func (x *Executor) podEndpoints(ctx context.Context, svc *corev1.Service, sp corev1.ServicePort) ([]netip.AddrPort, error) {
	list, err := x.Reads.Clients.Kube.DiscoveryV1().EndpointSlices(svc.Namespace).List(ctx, metav1.ListOptions{
		LabelSelector: labels.SelectorFromSet(labels.Set{discoveryv1.LabelServiceName: svc.Name}).String(),
		Limit:         maxEndpointSlices,
	})
	if err != nil {
		return nil, fmt.Errorf("list EndpointSlices: %w", err)
	}
	selector := labels.SelectorFromSet(svc.Spec.Selector)
	var out []netip.AddrPort
	checks := 0
	for _, slice := range list.Items {
		if slice.AddressType != discoveryv1.AddressTypeIPv4 && slice.AddressType != discoveryv1.AddressTypeIPv6 {
			continue
		}
		port, ok := slicePort(slice.Ports, sp.Name)
		if !ok {
			continue
		}
		for _, ep := range slice.Endpoints {
			if checks >= maxEndpointChecks || len(out) >= maxEndpoints {
				return out, nil
			}
			c, ref := ep.Conditions, ep.TargetRef
			if c.Ready != nil && !*c.Ready || c.Terminating != nil && *c.Terminating || len(ep.Addresses) == 0 ||
				ref == nil || ref.Kind != "Pod" || ref.Namespace != svc.Namespace || ref.Name == "" {
				continue
			}
			addr, err := netip.ParseAddr(ep.Addresses[0])
			if err != nil || slices.Contains(out, netip.AddrPortFrom(addr, port)) {
				continue
			}
			checks++
			own, err := x.ownPod(ctx, svc.Namespace, ref, selector, addr)
			if err != nil {
				return nil, err
			}
			if own {
				out = append(out, netip.AddrPortFrom(addr, port))
			}
		}
	}
	return out, nil
}

// slicePort is the TCP port an EndpointSlice gives the Service port named
// name (the controller names them alike).
func slicePort(ports []discoveryv1.EndpointPort, name string) (uint16, bool) {
	for _, p := range ports {
		if p.Port == nil || *p.Port < 1 || *p.Port > 65535 || p.Protocol != nil && *p.Protocol != corev1.ProtocolTCP {
			continue
		}
		if p.Name == nil && name == "" || p.Name != nil && *p.Name == name {
			return uint16(*p.Port), true
		}
	}
	return 0, false
}

// ownPod reports whether ref names a running Pod of namespace that selector
// picks, is not hostNetwork (whose IP is its node's) and has addr as its
// IP: the API server filters, so that only the Pod's metadata comes back.
func (x *Executor) ownPod(ctx context.Context, namespace string, ref *corev1.ObjectReference, selector labels.Selector, addr netip.Addr) (bool, error) {
	list, err := x.Reads.Clients.Metadata.Resource(corev1.SchemeGroupVersion.WithResource("pods")).Namespace(namespace).List(ctx, metav1.ListOptions{
		LabelSelector: selector.String(),
		FieldSelector: fields.AndSelectors(
			fields.OneTermEqualSelector("metadata.name", ref.Name),
			fields.OneTermEqualSelector("status.podIP", addr.String()),
			fields.OneTermEqualSelector("status.phase", string(corev1.PodRunning)),
			fields.OneTermEqualSelector("spec.hostNetwork", "false"),
		).String(),
		Limit: 1,
	})
	if err != nil {
		return false, fmt.Errorf("list Pod %s: %w", ref.Name, err)
	}
	if len(list.Items) != 1 {
		return false, nil
	}
	pod := list.Items[0]
	return pod.DeletionTimestamp == nil && (ref.UID == "" || ref.UID == pod.UID), nil
}
