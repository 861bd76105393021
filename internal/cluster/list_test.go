package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"reflect"
	"slices"
	"sync"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/nsman/nsman/internal/cluster"
	"github.com/nsman/nsman/internal/cluster/clustertest"
	"github.com/nsman/nsman/internal/listpage"
	"github.com/nsman/nsman/internal/listpage/listpagetest"
)

// pagedServer serves a NamespaceManager list in pages of the given items,
// as the API server pages it, and records the queries it got.
type pagedServer struct {
	pages [][]string
	// status, when set, answers every request with this status and body.
	status int
	body   string
	// expired maps a continue token to the one a 410 answer to it carries.
	expired map[string]string

	mu      sync.Mutex
	queries []string
	paths   []string
}

// seen returns the queries and paths of the requests so far.
func (p *pagedServer) seen() (queries, paths []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.queries), slices.Clone(p.paths)
}

func (p *pagedServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	p.queries = append(p.queries, r.URL.RawQuery)
	p.paths = append(p.paths, r.URL.Path)
	p.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	if p.status != 0 {
		w.WriteHeader(p.status)
		_, _ = w.Write([]byte(p.body))
		return
	}
	if next, ok := p.expired[r.URL.Query().Get("continue")]; ok {
		w.WriteHeader(http.StatusGone)
		_, _ = fmt.Fprintf(w, `{"kind":"Status","apiVersion":"v1","metadata":{"continue":%q},"status":"Failure","reason":"Expired","code":410,"message":"The provided continue parameter is too old"}`, next)
		return
	}
	i := 0
	if c := r.URL.Query().Get("continue"); c != "" {
		_, _ = fmt.Sscanf(c, "page-%d", &i)
	}
	next := ""
	if i+1 < len(p.pages) {
		next = fmt.Sprintf("page-%d", i+1)
	}
	_, _ = w.Write([]byte(listpagetest.ListPage(next, p.pages[i]...)))
}

// readerFor is a cluster.Reader that lists managers from server.
func readerFor(t *testing.T, server http.Handler, r cluster.Reader) cluster.Reader {
	t.Helper()
	r.Clients, r.Log = cluster.Clients{Managers: clustertest.ManagersClient(t, server)}, slog.New(slog.DiscardHandler)
	return r
}

func TestEachManagerPages(t *testing.T) {
	server := &pagedServer{pages: [][]string{{listpagetest.StoredManager(0), listpagetest.StoredManager(1)}, {listpagetest.StoredManager(2)}, {listpagetest.StoredManager(3), listpagetest.StoredManager(4)}}}
	s := readerFor(t, server, cluster.Reader{Namespace: "team-a", LabelSelector: "tier=e2e", PageSize: 2})
	var names []string
	if err := s.EachManager(t.Context(), false, func(m listpage.Listed) { names = append(names, m.Obj.GetName()) }); err != nil {
		t.Fatal(err)
	}
	if want := []string{"team-00000", "team-00001", "team-00002", "team-00003", "team-00004"}; !reflect.DeepEqual(names, want) {
		t.Errorf("listed %v, want %v", names, want)
	}
	queries, paths := server.seen()
	wantQueries := []string{"labelSelector=tier%3De2e&limit=2", "continue=page-1&labelSelector=tier%3De2e&limit=2", "continue=page-2&labelSelector=tier%3De2e&limit=2"}
	if !reflect.DeepEqual(queries, wantQueries) {
		t.Errorf("queries %q, want %q", queries, wantQueries)
	}
	for _, path := range paths {
		if path != "/apis/k8s.consol.de/v1beta1/namespaces/team-a/namespacemanagers" {
			t.Errorf("path %s", path)
		}
	}

	everywhere := &pagedServer{pages: [][]string{{listpagetest.StoredManager(0)}}}
	if err := readerFor(t, everywhere, cluster.Reader{PageSize: 500}).EachManager(t.Context(), false, func(listpage.Listed) {}); err != nil {
		t.Fatal(err)
	}
	if _, paths := everywhere.seen(); !reflect.DeepEqual(paths, []string{"/apis/k8s.consol.de/v1beta1/namespacemanagers"}) {
		t.Errorf("paths %v, want the managers of every namespace", paths)
	}
}

// A page whose continue token expired is answered 410 with a token that
// resumes after the last manager listed: the listing goes on with it.
func TestEachManagerResumesPastAnExpiredToken(t *testing.T) {
	server := &pagedServer{
		pages:   [][]string{{listpagetest.StoredManager(0), listpagetest.StoredManager(1)}, {listpagetest.StoredManager(2)}, {listpagetest.StoredManager(3), listpagetest.StoredManager(4)}},
		expired: map[string]string{"page-1": "page-2"},
	}
	var names []string
	if err := readerFor(t, server, cluster.Reader{PageSize: 2}).EachManager(t.Context(), false, func(m listpage.Listed) { names = append(names, m.Obj.GetName()) }); err != nil {
		t.Fatal(err)
	}
	// The manager on the expired page was removed meanwhile, say: the new
	// token resumes after it.
	if want := []string{"team-00000", "team-00001", "team-00003", "team-00004"}; !reflect.DeepEqual(names, want) {
		t.Errorf("listed %v, want %v", names, want)
	}
	// A 410 without a token, or on the first page, ends the listing.
	server = &pagedServer{status: http.StatusGone, body: `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Expired","code":410}`}
	if err := readerFor(t, server, cluster.Reader{PageSize: 2}).EachManager(t.Context(), false, func(listpage.Listed) {}); !apierrors.IsResourceExpired(err) {
		t.Errorf("error %v, want the 410", err)
	}
}

// The server's refusal comes back as the error it describes, its message
// included: a sweep tells a missing CRD by NotFound, and a user reads why
// access was denied.
func TestEachManagerReportsTheServersError(t *testing.T) {
	tests := []struct {
		code    int
		reason  string
		message string
		is      func(error) bool
	}{
		{http.StatusNotFound, "NotFound", "the server could not find the requested resource", apierrors.IsNotFound},
		{http.StatusForbidden, "Forbidden", `namespacemanagers.k8s.consol.de is forbidden: User "system:serviceaccount:ci:nsman" cannot list resource "namespacemanagers"`, apierrors.IsForbidden},
	}
	for _, tt := range tests {
		t.Run(tt.reason, func(t *testing.T) {
			server := &pagedServer{status: tt.code, body: fmt.Sprintf(`{"kind":"Status","apiVersion":"v1","status":"Failure","reason":%q,"code":%d,"message":%q}`, tt.reason, tt.code, tt.message)}
			err := readerFor(t, server, cluster.Reader{PageSize: 500}).EachManager(t.Context(), false, func(listpage.Listed) { t.Error("a manager from an error") })
			if !tt.is(err) || err.Error() != tt.message {
				t.Errorf("error %v, want %s: %s", err, tt.reason, tt.message)
			}
		})
	}
}

// Once ctx is done, the page in hand is finished and no further page is
// fetched.
func TestEachManagerStopsWithItsContext(t *testing.T) {
	server := &pagedServer{pages: [][]string{{listpagetest.StoredManager(0), listpagetest.StoredManager(1)}, {listpagetest.StoredManager(2)}, {listpagetest.StoredManager(3)}, {listpagetest.StoredManager(4)}}}
	s := readerFor(t, server, cluster.Reader{PageSize: 2})
	ctx, cancel := context.WithCancel(t.Context())
	var names []string
	err := s.EachManager(ctx, false, func(m listpage.Listed) {
		names = append(names, m.Obj.GetName())
		cancel()
	})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("error %v, want context.Canceled", err)
	}
	if want := []string{"team-00000", "team-00001"}; !reflect.DeepEqual(names, want) {
		t.Errorf("handled %v, want the first page, %v", names, want)
	}
	// The second page may have been fetched while the first was handled;
	// none after it.
	if queries, _ := server.seen(); len(queries) > 2 {
		t.Errorf("%d pages fetched after the sweep stopped: %q", len(queries)-1, queries)
	}
}
