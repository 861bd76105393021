package cluster

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
)

// Request is one API request as the audit log recorded it.
type Request struct {
	Verb        string
	APIGroup    string
	Resource    string
	Subresource string
	Namespace   string
	Name        string
	// Code is the HTTP status code of the response.
	Code int
}

func (r Request) String() string {
	res := r.Resource
	if r.APIGroup != "" {
		res += "." + r.APIGroup
	}
	if r.Subresource != "" {
		res += "/" + r.Subresource
	}
	return fmt.Sprintf("%s %s %s/%s -> %d", r.Verb, res, r.Namespace, r.Name, r.Code)
}

// auditEvent is the part of an audit.k8s.io/v1 Event that Request needs.
type auditEvent struct {
	Stage string `json:"stage"`
	Verb  string `json:"verb"`
	User  struct {
		Username string `json:"username"`
	} `json:"user"`
	ObjectRef *struct {
		APIGroup    string `json:"apiGroup"`
		Resource    string `json:"resource"`
		Subresource string `json:"subresource"`
		Namespace   string `json:"namespace"`
		Name        string `json:"name"`
	} `json:"objectRef"`
	ResponseStatus *struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
}

// AuditedRequests returns, in the order the API server completed them, the
// resource requests that user has made so far. Requests that completed before
// the call are all included: it first makes a marker request and waits until
// the audit log holds it.
func (c *Cluster) AuditedRequests(ctx context.Context, user string) ([]Request, error) {
	marker, err := randomToken()
	if err != nil {
		return nil, err
	}
	marker = "nsman-audit-marker-" + marker
	// A GET of a ConfigMap that does not exist: audited, harmless.
	_, _ = c.Admin.CoreV1().ConfigMaps(metav1.NamespaceDefault).Get(ctx, marker, metav1.GetOptions{})

	var found []Request
	err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		reqs, seen, err := c.readAudit(user, marker)
		found = reqs
		return seen, err
	})
	if err != nil {
		return nil, fmt.Errorf("audit log %s: marker request not logged: %w", c.auditLog, err)
	}
	return found, nil
}

// readAudit parses the audit log, returning user's requests and whether the
// marker request is logged.
func (c *Cluster) readAudit(user, marker string) ([]Request, bool, error) {
	f, err := os.Open(c.auditLog)
	if err != nil {
		return nil, false, err
	}
	defer f.Close()
	var (
		reqs []Request
		seen bool
	)
	scanner := bufio.NewScanner(f)
	scanner.Buffer(make([]byte, 0, 64*1024), 16*1024*1024)
	for scanner.Scan() {
		var ev auditEvent
		if err := json.Unmarshal(scanner.Bytes(), &ev); err != nil {
			return nil, false, fmt.Errorf("parse audit event: %w", err)
		}
		if ev.Stage != "ResponseComplete" && ev.Stage != "Panic" || ev.ObjectRef == nil {
			continue
		}
		if ev.User.Username == AdminUser && ev.ObjectRef.Name == marker {
			seen = true
			continue
		}
		if ev.User.Username != user {
			continue
		}
		r := Request{
			Verb:        ev.Verb,
			APIGroup:    ev.ObjectRef.APIGroup,
			Resource:    ev.ObjectRef.Resource,
			Subresource: ev.ObjectRef.Subresource,
			Namespace:   ev.ObjectRef.Namespace,
			Name:        ev.ObjectRef.Name,
		}
		if ev.ResponseStatus != nil {
			r.Code = ev.ResponseStatus.Code
		}
		reqs = append(reqs, r)
	}
	return reqs, seen, scanner.Err()
}
