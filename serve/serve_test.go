package serve

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/nsman/nsman/internal/cluster"
	"github.com/nsman/nsman/internal/status"
	"github.com/nsman/nsman/links"
)

var (
	testKey = []byte("the-signing-key")
	now     = time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
)

// fixture is a Server over a fake API server holding namespace preview-1
// (UID uid-1), served on loopback.
type fixture struct {
	kube *fake.Clientset
	srv  *httptest.Server
	s    *Server
	now  time.Time
}

func newFixture(t *testing.T, mut ...func(*Config)) *fixture {
	t.Helper()
	keyFile := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(keyFile, append(testKey, '\n'), 0o600); err != nil {
		t.Fatal(err)
	}
	f := &fixture{kube: fake.NewClientset(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "preview-1", UID: "uid-1"}}), now: now}
	cfg := Config{KeyFile: keyFile, MaxHold: 30 * 24 * time.Hour, UserHeader: "X-Forwarded-Email", Clients: cluster.Clients{Kube: f.kube}, Now: func() time.Time { return f.now }}
	for _, m := range mut {
		m(&cfg)
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	f.s, f.srv = s, httptest.NewServer(s.Handler())
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fixture) token(mut ...func(*links.Link)) string {
	l := links.Link{Namespace: "preview-1", UID: "uid-1", Action: links.Extend, Duration: 24 * time.Hour, Expires: now.Add(links.DefaultValidity)}
	for _, m := range mut {
		m(&l)
	}
	return links.Sign(testKey, l)
}

func (f *fixture) get(t *testing.T, token string, header ...string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, f.srv.URL+links.Path+"?t="+url.QueryEscape(token), nil)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	return f.do(t, req)
}

// post sends the form of the page of token, from origin.
func (f *fixture) post(t *testing.T, token, origin string) (int, string) {
	t.Helper()
	form := url.Values{"t": {token}, "f": {f.s.formToken(token)}}
	req, _ := http.NewRequest(http.MethodPost, f.srv.URL+links.Path+"?t="+url.QueryEscape(token), strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if origin != "" {
		req.Header.Set("Origin", origin)
	}
	return f.do(t, req)
}

func (f *fixture) do(t *testing.T, req *http.Request) (int, string) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// writes are the mutating requests the fake API server got.
func (f *fixture) writes() int {
	n := 0
	for _, a := range f.kube.Actions() {
		if a.GetVerb() != "get" && a.GetVerb() != "list" && a.GetVerb() != "watch" {
			n++
		}
	}
	return n
}

func (f *fixture) annotation(t *testing.T, key string) string {
	t.Helper()
	ns, err := f.kube.CoreV1().Namespaces().Get(t.Context(), "preview-1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return ns.Annotations[key]
}

func TestGetShowsAndWritesNothing(t *testing.T) {
	f := newFixture(t)
	code, body := f.get(t, f.token(), "X-Forwarded-Email", `<script>alert(1)</script>@example.com`)
	if code != http.StatusOK || !strings.Contains(body, "preview-1") || !strings.Contains(body, `id="confirm"`) || !strings.Contains(body, "neither held nor woken") {
		t.Fatalf("GET: %d %s", code, body)
	}
	if strings.Contains(body, "<script>") || !strings.Contains(body, "&lt;script&gt;") {
		t.Errorf("the user header is not escaped: %s", body)
	}
	if strings.Contains(body, string(testKey)) {
		t.Errorf("the page shows the key")
	}
	if n := f.writes(); n != 0 {
		t.Errorf("GET wrote %d times", n)
	}
}

func TestPostWritesOncePerMinute(t *testing.T) {
	for _, tc := range []struct {
		name   string
		action links.Action
		key    string
	}{{"extend", links.Extend, status.HoldAnnotation}, {"wake", links.Wake, status.WakeAnnotation}} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			token := f.token(func(l *links.Link) { l.Action = tc.action })
			if code, body := f.post(t, token, f.srv.URL); code != http.StatusOK || !strings.Contains(body, "Done") {
				t.Fatalf("POST: %d %s", code, body)
			}
			want := now.Add(24 * time.Hour).Format(time.RFC3339)
			if got := f.annotation(t, tc.key); got != want || f.writes() != 1 {
				t.Fatalf("%s = %q after %d writes, want %q after 1", tc.key, got, f.writes(), want)
			}
			if code, _ := f.post(t, token, f.srv.URL); code != http.StatusTooManyRequests || f.writes() != 1 {
				t.Errorf("a second POST within a minute: %d, %d writes; want 429 and still 1", code, f.writes())
			}
			f.now = now.Add(time.Minute)
			if code, _ := f.post(t, token, f.srv.URL); code != http.StatusOK || f.writes() != 2 {
				t.Errorf("a POST a minute later: %d, %d writes; want 200 and 2", code, f.writes())
			}
		})
	}
}

// A link never shortens a hold or a wake that ends later.
func TestPostNeverShortens(t *testing.T) {
	f := newFixture(t)
	later := now.Add(10 * 24 * time.Hour).Format(time.RFC3339)
	ns, _ := f.kube.CoreV1().Namespaces().Get(t.Context(), "preview-1", metav1.GetOptions{})
	ns.Annotations = map[string]string{status.HoldAnnotation: later}
	if _, err := f.kube.CoreV1().Namespaces().Update(t.Context(), ns, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	writes := f.writes()
	if code, body := f.post(t, f.token(), f.srv.URL); code != http.StatusOK || !strings.Contains(body, "already held until") {
		t.Fatalf("POST: %d %s", code, body)
	}
	if f.writes() != writes || f.annotation(t, status.HoldAnnotation) != later {
		t.Errorf("the hold until %s was rewritten: %q", later, f.annotation(t, status.HoldAnnotation))
	}
}

func TestRefusals(t *testing.T) {
	good := func(f *fixture) string { return f.token() }
	for _, tc := range []struct {
		name   string
		token  func(*fixture) string
		origin func(*fixture) string
		setup  func(*fixture)
		code   int
		says   string
	}{
		{name: "tampered", token: func(f *fixture) string {
			tok := f.token(func(l *links.Link) { l.Duration = 7 * 24 * time.Hour })
			return tok[:strings.Index(tok, ".")] + good(f)[strings.Index(good(f), "."):]
		}, code: http.StatusForbidden, says: "altered"},
		{name: "expired", token: good, setup: func(f *fixture) { f.now = now.Add(links.DefaultValidity) }, code: http.StatusGone, says: "expired"},
		{name: "recreated", token: func(f *fixture) string { return f.token(func(l *links.Link) { l.UID = "uid-0" }) }, code: http.StatusConflict, says: "created again"},
		{name: "gone", token: func(f *fixture) string { return f.token(func(l *links.Link) { l.Namespace = "preview-2" }) }, code: http.StatusNotFound, says: "no longer exists"},
		{name: "over the cap", token: func(f *fixture) string { return f.token(func(l *links.Link) { l.Duration = 31 * 24 * time.Hour }) }, code: http.StatusForbidden, says: "longer than this installation allows"},
		{name: "from another origin", token: good, origin: func(*fixture) string { return "https://evil.example.com" }, code: http.StatusForbidden, says: "own page: open the link"},
		{name: "with no origin", token: good, origin: func(*fixture) string { return "" }, code: http.StatusForbidden, says: "own page: open the link"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			if tc.setup != nil {
				tc.setup(f)
			}
			origin := f.srv.URL
			if tc.origin != nil {
				origin = tc.origin(f)
			}
			if tc.origin == nil {
				if code, body := f.get(t, tc.token(f)); code != tc.code || !strings.Contains(body, tc.says) || strings.Contains(body, `id="confirm"`) {
					t.Errorf("GET: %d, want %d and a page saying %q without a button: %s", code, tc.code, tc.says, body)
				}
			}
			if code, body := f.post(t, tc.token(f), origin); code != tc.code || !strings.Contains(body, tc.says) || !strings.Contains(body, "Nothing was changed") {
				t.Errorf("POST: %d, want %d and a page saying %q: %s", code, tc.code, tc.says, body)
			}
			if n := f.writes(); n != 0 {
				t.Errorf("a refused link wrote %d times", n)
			}
		})
	}
}

func TestHealthAndMetrics(t *testing.T) {
	f := newFixture(t)
	f.get(t, f.token())
	f.get(t, "forged")
	resp, err := http.Get(f.srv.URL + "/healthz")
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("/healthz: %v %v", resp, err)
	}
	resp.Body.Close()
	resp, err = http.Get(f.srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{`nsman_serve_answers_total{method="GET",result="shown"} 1`, `nsman_serve_answers_total{method="GET",result="invalid"} 1`} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

func TestLimiterIsBounded(t *testing.T) {
	l := newLimiter(time.Minute, 2)
	if !l.allow("a", now) || !l.allow("b", now) {
		t.Fatal("the first two links refused")
	}
	if l.allow("c", now.Add(30*time.Second)) {
		t.Error("a third link allowed while the limiter is full of links within their minute")
	}
	if !l.allow("c", now.Add(time.Minute)) || len(l.last) > 2 {
		t.Errorf("a third link refused once the others' minute passed, or kept beyond the bound (%d)", len(l.last))
	}
}

func TestDurationWords(t *testing.T) {
	for d, want := range map[time.Duration]string{
		24 * time.Hour:            "1 day",
		7 * 24 * time.Hour:        "1 week",
		2 * time.Hour:             "2 hours",
		90 * time.Minute:          "90 minutes",
		36 * time.Hour:            "36 hours",
		14 * 24 * time.Hour:       "2 weeks",
		time.Second + 2*time.Hour: "2h1s",
	} {
		if got := human(d); got != want {
			t.Errorf("%s: %q, want %q", d, got, want)
		}
	}
}

// Every field a page shows is escaped, in text and in attributes alike.
func TestPageEscapesEachField(t *testing.T) {
	const hostile = `<x a="1" b='2'>&`
	const escaped = `&lt;x a=&#34;1&#34; b=&#39;2&#39;&gt;&amp;`
	out := page{Title: hostile, Lines: []string{hostile}, Token: hostile, FormToken: hostile, Button: hostile}.render()
	if strings.Contains(out, "<x") || strings.Contains(out, `"1"`) {
		t.Fatalf("a field is not escaped:\n%s", out)
	}
	if n := strings.Count(out, escaped); n != 6 {
		t.Errorf("%d fields escaped, want 6 (title twice, a line, both tokens, the button):\n%s", n, out)
	}
}

// The page names the command that does what its button does, with the
// duration as nsman hold's and nsman wake's --for take it (7d, 1h30m).
func TestPageSaysTheCommandsDuration(t *testing.T) {
	f := newFixture(t)
	for _, tc := range []struct {
		link func(*links.Link)
		says string
	}{
		{func(l *links.Link) { l.Duration = 7 * 24 * time.Hour }, "as nsman hold preview-1 --for 7d does"},
		{func(l *links.Link) { l.Action, l.Duration = links.Wake, 90*time.Minute }, "as nsman wake preview-1 --for 1h30m does"},
	} {
		if code, body := f.get(t, f.token(tc.link)); code != http.StatusOK || !strings.Contains(body, tc.says) {
			t.Errorf("GET: %d, want a page saying %q:\n%s", code, tc.says, body)
		}
	}
}
