package integration

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/nsman/nsman/cmd"
	nsmancluster "github.com/nsman/nsman/internal/cluster"
	"github.com/nsman/nsman/internal/execute"
	"github.com/nsman/nsman/internal/status"
	"github.com/nsman/nsman/internal/tell"
	"github.com/nsman/nsman/links"
	"github.com/nsman/nsman/test/nsmantest"
)

// linkTo is a link of s to namespace ns as it is now, mut applied.
func linkTo(t *testing.T, s *nsmantest.Serve, ns string, mut ...func(*links.Link)) string {
	t.Helper()
	got, err := shared.Admin.CoreV1().Namespaces().Get(t.Context(), ns, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	l := links.Link{Namespace: ns, UID: string(got.UID), Action: links.Extend, Duration: 24 * time.Hour, Expires: time.Now().Add(links.DefaultValidity)}
	for _, m := range mut {
		m(&l)
	}
	return links.URL(s.URL, links.Sign(s.Key, l))
}

// press opens link and sends its page's form as a browser on serve's page
// would: the form's fields, with serve's origin.
func press(t *testing.T, s *nsmantest.Serve, link string) (int, string) {
	t.Helper()
	_, page := fetch(t, http.MethodGet, link, "", "")
	form := url.Values{}
	for _, m := range regexp.MustCompile(`name="([tf])" value="([^"]*)"`).FindAllStringSubmatch(page, -1) {
		form.Set(m[1], m[2])
	}
	return fetch(t, http.MethodPost, link, form.Encode(), s.URL)
}

func fetch(t *testing.T, method, link, form, origin string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, link, strings.NewReader(form))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-Forwarded-Email", "dev@example.com")
	if method == http.MethodPost {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", origin)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// TestServeWritesOnlyOnThePagesPost: nsman serve, as a ServiceAccount that
// may read and patch one namespace, on a real API server. A GET writes
// nothing (the audit log says so); the page's POST writes the hold once,
// and a second POST within a minute nothing; a tampered link, an expired
// one and one to a namespace recreated under its name are refused and
// write nothing.
func TestServeWritesOnlyOnThePagesPost(t *testing.T) {
	setup(t)
	ns := shared.Namespace(t)
	s := nsmantest.StartServe(t, shared, ns)
	link := linkTo(t, s, ns)

	if code, page := fetch(t, http.MethodGet, link, "", ""); code != http.StatusOK || !strings.Contains(page, ns) || !strings.Contains(page, "dev@example.com") {
		t.Fatalf("GET: %d %s", code, page)
	}
	if w := nsmantest.NamespaceWrites(t, shared, s.User, ns); len(w) != 0 {
		t.Fatalf("a GET wrote %v", w)
	}
	before := time.Now()
	if code, page := press(t, s, link); code != http.StatusOK || !strings.Contains(page, "is held until") {
		t.Fatalf("POST: %d %s", code, page)
	}
	got, err := shared.Admin.CoreV1().Namespaces().Get(t.Context(), ns, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	until, err := time.Parse(time.RFC3339, got.Annotations[status.HoldAnnotation])
	if err != nil || until.Before(before.Add(24*time.Hour).Add(-time.Second)) || until.After(time.Now().Add(24*time.Hour)) {
		t.Errorf("hold %q (%v): want a day from the POST", got.Annotations[status.HoldAnnotation], err)
	}
	if code, _ := press(t, s, link); code != http.StatusTooManyRequests {
		t.Errorf("a second POST within a minute: %d, want 429", code)
	}
	if w := nsmantest.NamespaceWrites(t, shared, s.User, ns); len(w) != 1 || w[0].Verb != "patch" {
		t.Errorf("writes %v, want one patch", w)
	}

	token := link[strings.Index(link, "?t=")+3:]
	longer := linkTo(t, s, ns, func(l *links.Link) { l.Duration = 7 * 24 * time.Hour })
	tampered := longer[:strings.Index(longer, "?t=")+3] + strings.Split(longer[strings.Index(longer, "?t=")+3:], ".")[0] + "." + strings.Split(token, ".")[1]
	expired := linkTo(t, s, ns, func(l *links.Link) { l.Expires = time.Now().Add(-time.Minute) })
	for _, tc := range []struct {
		name, link string
		code       int
	}{{"tampered", tampered, http.StatusForbidden}, {"expired", expired, http.StatusGone}} {
		if code, page := fetch(t, http.MethodGet, tc.link, "", ""); code != tc.code || !strings.Contains(page, "Nothing was changed") || strings.Contains(page, "<form") {
			t.Errorf("%s link: %d, want %d and a refusal without a button: %s", tc.name, code, tc.code, page)
		}
		if code, _ := press(t, s, tc.link); code < 400 || code > 499 {
			t.Errorf("%s link's POST: %d, want a refusal", tc.name, code)
		}
	}

	// The namespace deleted and created again under its name: the link
	// was for the one before.
	if err := shared.Admin.CoreV1().Namespaces().Delete(t.Context(), ns, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := shared.Admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
		return err == nil, nil
	}); err != nil {
		t.Fatalf("recreate %s: %v", ns, err)
	}
	// serve's own ServiceAccount outlived the namespace: when it was one of
	// the namespace's, the GET below was refused Unauthorized once the
	// recreation took longer than the API server's token cache (10 s).
	if _, err := shared.Admin.CoreV1().ServiceAccounts(s.Home).Get(t.Context(), "nsman-serve", metav1.GetOptions{}); err != nil || s.Home == ns {
		t.Fatalf("serve's ServiceAccount in %s, after %s was deleted: %v", s.Home, ns, err)
	}
	if code, page := fetch(t, http.MethodGet, link, "", ""); code != http.StatusConflict || !strings.Contains(page, "created again") {
		t.Errorf("GET of a link to the namespace before: %d %s", code, page)
	}
	if w := nsmantest.NamespaceWrites(t, shared, s.User, ns); len(w) != 1 {
		t.Errorf("writes %v after the refusals, want still the one patch", w)
	}
}

// TestHoldIfUIDIsConditional: the write serve sends names the namespace's
// UID, which the API server takes as a precondition: on a namespace of
// another UID it is refused (metadata.uid is immutable), and writes nothing.
func TestHoldIfUIDIsConditional(t *testing.T) {
	setup(t)
	ns := shared.Namespace(t)
	clients, err := cmd.NewClients(shared.AdminConfig, nsmancluster.NewAPIObserver(nil))
	if err != nil {
		t.Fatal(err)
	}
	until := time.Now().Add(time.Hour)
	if _, err := execute.HoldIfUID(t.Context(), clients, ns, "00000000-0000-0000-0000-000000000000", until); !apierrors.IsInvalid(err) && !apierrors.IsConflict(err) {
		t.Fatalf("a hold of another UID: %v, want it refused", err)
	}
	got, err := shared.Admin.CoreV1().Namespaces().Get(t.Context(), ns, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := got.Annotations[status.HoldAnnotation]; ok {
		t.Fatalf("the refused hold was written: %q", v)
	}
	if _, err := execute.HoldIfUID(t.Context(), clients, ns, string(got.UID), until); err != nil {
		t.Fatalf("a hold of the namespace's UID: %v", err)
	}
}

// TestSleepNotificationLinksServe: a sweep with --links-url and
// --links-signing-key-file puts a namespace to sleep, and its notification
// carries the three links, bound to the namespace; nsman serve, holding the
// same key, honours the one that wakes it. The key appears nowhere in the
// notification nor in the sweep's output.
func TestSleepNotificationLinksServe(t *testing.T) {
	e := setup(t)
	ns := sleepyNamespace(t)
	s := nsmantest.StartServe(t, shared, ns)
	notify := nsmantest.NewReceiver(t)
	res := e.Sweep(t, "-l", caseLabel+"="+ns, "--notify-url", notify.URL+"/nsman",
		"--links-url", s.URL, "--links-signing-key-file", writeTemp(t, "links-key", string(s.Key)+"\n"))
	wantCode(t, res, 0)
	if strings.Contains(res.Stdout+res.Stderr, string(s.Key)) {
		t.Errorf("the sweep's output shows the key")
	}
	deliveries := notify.Deliveries()
	if len(deliveries) != 1 || strings.Contains(string(deliveries[0].Body), string(s.Key)) {
		t.Fatalf("%d notifications, want one without the key", len(deliveries))
	}
	var n tell.Notification
	if err := json.Unmarshal(deliveries[0].Body, &n); err != nil {
		t.Fatal(err)
	}
	var actions []string
	for _, l := range n.Links {
		actions = append(actions, l.Action+" "+l.Duration)
	}
	if strings.Join(actions, ", ") != "extend 24h, extend 168h, wake 2h" {
		t.Fatalf("links %+v, want extend 24h, extend 168h, wake 2h", n.Links)
	}
	if code, page := press(t, s, n.Links[2].URL); code != http.StatusOK || !strings.Contains(page, "is woken until") {
		t.Fatalf("the wake link's POST: %d %s", code, page)
	}
	got, err := shared.Admin.CoreV1().Namespaces().Get(t.Context(), ns, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Annotations[status.WakeAnnotation] == "" {
		t.Errorf("no wake on %s after the link: %v", ns, got.Annotations)
	}
}
