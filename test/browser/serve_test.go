package browser

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nsman/nsman/internal/status"
	"github.com/nsman/nsman/links"
	"github.com/nsman/nsman/test/nsmantest"
)

// browse runs Chromium, headless, until t ends.
func browse(t *testing.T) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chromium(t)), chromedp.NoSandbox, chromedp.Flag("disable-gpu", true))
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(alloc)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	ctx, cancelTimeout := context.WithTimeout(ctx, 90*time.Second)
	t.Cleanup(cancelTimeout)
	// The proxy in front (oauth2-proxy) would set the user's header.
	if _, err := chromedp.Call(ctx, network.Enable, network.EnableParams{}); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	if _, err := chromedp.Call(ctx, network.SetExtraHTTPHeaders, network.SetExtraHTTPHeadersParams{Headers: network.Headers{"X-Forwarded-Email": "dev@example.com"}}); err != nil {
		t.Fatalf("set the user's header: %v", err)
	}
	return ctx
}

// page opens link (when not empty) and returns the page's title and text.
func page(t *testing.T, ctx context.Context, link string) (title, text string) {
	t.Helper()
	if link != "" {
		if err := chromedp.Do(ctx, chromedp.Navigate(link)); err != nil {
			t.Fatalf("open %s: %v", link, err)
		}
	}
	title, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("#title")))
	if err != nil {
		t.Fatalf("read the title: %v", err)
	}
	if text, err = chromedp.Run(ctx, chromedp.Text(chromedp.CSS("body"))); err != nil {
		t.Fatalf("read the page: %v", err)
	}
	return title, text
}

// TestPageInABrowser: a link's page in Chromium says what it does; its
// button writes the hold on the namespace; a prefetch (a GET, as a chat app
// makes to preview a link) writes nothing; a tampered link shows the
// refusal.
func TestPageInABrowser(t *testing.T) {
	ctx := browse(t)
	setup(t)
	ns := shared.Namespace(t)
	s := nsmantest.StartServe(t, shared, ns)
	got, err := shared.Admin.CoreV1().Namespaces().Get(t.Context(), ns, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	l := links.Link{Namespace: ns, UID: string(got.UID), Action: links.Extend, Duration: 7 * 24 * time.Hour, Expires: time.Now().Add(links.DefaultValidity)}
	link := links.URL(s.URL, links.Sign(s.Key, l))

	prefetch, err := http.Get(link)
	if err != nil {
		t.Fatal(err)
	}
	prefetch.Body.Close()
	if w := nsmantest.NamespaceWrites(t, shared, s.User, ns); prefetch.StatusCode != http.StatusOK || len(w) != 0 {
		t.Fatalf("prefetch: %d, writes %v; want 200 and none", prefetch.StatusCode, w)
	}

	_, text := page(t, ctx, link)
	for _, want := range []string{ns, "until", "1 week", "neither held nor woken", "Asked by dev@example.com"} {
		if !strings.Contains(text, want) {
			t.Errorf("the page does not say %q:\n%s", want, text)
		}
	}
	if w := nsmantest.NamespaceWrites(t, shared, s.User, ns); len(w) != 0 {
		t.Fatalf("opening the page wrote %v", w)
	}

	before := time.Now()
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS("#confirm")), chromedp.WaitReady(chromedp.CSS("#done"))); err != nil {
		t.Fatalf("press the button: %v", err)
	}
	title, text := page(t, ctx, "")
	if title != "Done" || !strings.Contains(text, "is held until") {
		t.Errorf("after the button: %q, %q", title, text)
	}
	got, err = shared.Admin.CoreV1().Namespaces().Get(t.Context(), ns, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	until, err := time.Parse(time.RFC3339, got.Annotations[status.HoldAnnotation])
	if err != nil || until.Before(before.Add(7*24*time.Hour).Add(-time.Second)) || until.After(time.Now().Add(7*24*time.Hour)) {
		t.Errorf("hold %q (%v): want a week from the press", got.Annotations[status.HoldAnnotation], err)
	}

	// The same link with a signature of another's: refused, no button.
	other := links.Sign(s.Key, links.Link{Namespace: ns, UID: string(got.UID), Action: links.Wake, Duration: 2 * time.Hour, Expires: l.Expires})
	token := links.Sign(s.Key, l)
	tampered := links.URL(s.URL, token[:strings.Index(token, ".")]+other[strings.Index(other, "."):])
	title, text = page(t, ctx, tampered)
	buttons, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("button").length`))
	if err != nil {
		t.Fatalf("count the buttons: %v", err)
	}
	if title != "This link cannot be used" || !strings.Contains(text, "altered") || buttons != 0 {
		t.Errorf("tampered link: %q, %q, buttons %v", title, text, buttons)
	}
	if w := nsmantest.NamespaceWrites(t, shared, s.User, ns); len(w) != 1 {
		t.Errorf("writes %v, want the one patch of the button", w)
	}
}
