package tell

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/nsman/nsman/policy"
	"github.com/nsman/nsman/report"
)

// TestFormatsRegistry: each registered format has a name of its own and a
// help, which --notify-format's help lists in order; LookupFormat finds
// each and refuses any other name, listing them all.
func TestFormatsRegistry(t *testing.T) {
	names := FormatNames()
	if len(names) == 0 || names[0] != DefaultFormat {
		t.Fatalf("formats %v, want the default %q first", names, DefaultFormat)
	}
	help, last := FormatHelp(), 0
	for i, f := range formats {
		if slices.Index(names, f.Name()) != i {
			t.Errorf("format %q registered twice", f.Name())
		}
		if f.Help() == "" {
			t.Errorf("format %q has no help", f.Name())
		}
		at := strings.Index(help, f.Name()+" ("+f.Help()+")")
		if at < last {
			t.Errorf("help %q lists %q out of order, or not at all", help, f.Name())
		}
		last = at
		if got, err := LookupFormat(f.Name()); err != nil || got.Name() != f.Name() {
			t.Errorf("LookupFormat(%q) = %v, %v", f.Name(), got, err)
		}
	}
	_, err := LookupFormat("xml")
	if err == nil || !strings.Contains(err.Error(), strings.Join(names, ", ")) || !strings.Contains(err.Error(), `"xml"`) {
		t.Errorf("LookupFormat(xml): %v, want an error naming xml and listing %v", err, names)
	}
}

// A notifier or body given no format, or one no format has, sends json,
// as before formats were registered.
func TestNoFormatIsJSON(t *testing.T) {
	n := Notification{Manager: NotificationManager{Namespace: "ops", Name: "m"}, Target: "t", Policy: "p", Action: policy.ActionDelete,
		Result: report.ResultSucceeded, Time: time.Date(2026, 12, 3, 14, 0, 0, 0, time.UTC)}
	want, err := json.Marshal(n)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"", "xml"} {
		got, err := notificationBody(n, name)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("format %q: %s, %v; want %s", name, got, err, want)
		}
		if f := NewNotifier("http://example.com", name, nil).format; f.Name() != DefaultFormat {
			t.Errorf("notifier of format %q sends %s", name, f.Name())
		}
	}
}

// TestFormatsShipped: the chart's values schema allows exactly the
// registered formats, and the docs describe each: a section of
// docs/notifications.md with an example body, and the chart's notify.format.
func TestFormatsShipped(t *testing.T) {
	read := func(path string) []byte {
		t.Helper()
		b, err := os.ReadFile(filepath.Join("..", "..", path))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	var schema struct {
		Properties struct {
			Notify struct {
				Properties struct {
					Format struct {
						Enum []string `json:"enum"`
					} `json:"format"`
				} `json:"properties"`
			} `json:"notify"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(read("deploy/helm/nsman/values.schema.json"), &schema); err != nil {
		t.Fatal(err)
	}
	if got := schema.Properties.Notify.Properties.Format.Enum; !slices.Equal(got, FormatNames()) {
		t.Errorf("the chart's schema allows notify.format %v, want %v", got, FormatNames())
	}
	notifications, values, helm := string(read("docs/notifications.md")), string(read("deploy/helm/nsman/values.yaml")), string(read("docs/helm.md"))
	_, notifyValues, _ := strings.Cut(values, "\nnotify:\n")
	notifyValues, _, _ = strings.Cut(notifyValues, "\n  format:")
	_, helmRow, _ := strings.Cut(helm, "| `notify.format` |")
	helmRow, _, _ = strings.Cut(helmRow, "\n")
	for _, name := range FormatNames() {
		section := "\n### `--notify-format " + name + "`\n"
		_, rest, ok := strings.Cut(notifications, section)
		text, _, _ := strings.Cut(rest, "\n#")
		_, example, found := strings.Cut(text, "```json\n")
		example, _, _ = strings.Cut(example, "```")
		if !ok || !found {
			t.Errorf("docs/notifications.md has no section %q with an example body", strings.TrimSpace(section))
		} else if want := mustBody(t, name, docsExample); !sameJSON(t, []byte(example), want) {
			t.Errorf("docs/notifications.md's example of %s is not what nsman sends; it sends\n%s", name, want)
		}
		if !strings.Contains(helmRow, "`"+name+"`") {
			t.Errorf("docs/helm.md's notify.format row does not name %s: %s", name, helmRow)
		}
		if !strings.Contains(notifyValues, " "+name+" (") {
			t.Errorf("values.yaml's notify.format does not describe %s", name)
		}
	}
}

// docsExample is the notification docs/notifications.md shows in each format.
var docsExample = Notification{
	Manager: NotificationManager{Namespace: "team-a", Name: "preview-4711"}, Target: "preview-4711",
	Policy: "delete after eight hours", Action: policy.ActionDelete, Result: report.ResultSucceeded,
	Message: "TTL 8h elapsed at 2026-11-23T17:00:00Z", Effects: []string{"delete namespace preview-4711"},
	Reclaimed: &report.Reclaimed{CPU: resource.MustParse("1250m"), Memory: resource.MustParse("2Gi"), Storage: resource.MustParse("10Gi"), LoadBalancers: 1},
	Time:      time.Date(2026, 11, 23, 17, 0, 31, 0, time.UTC), Sweep: "nsman-29400060-x7k2p-a1b2c3d4", Version: "v1.2.3",
}

// sameJSON reports whether a and b are the same JSON value.
func sameJSON(t *testing.T, a, b []byte) bool {
	t.Helper()
	var va, vb any
	if err := json.Unmarshal(a, &va); err != nil {
		t.Errorf("%v in\n%s", err, a)
		return false
	}
	if err := json.Unmarshal(b, &vb); err != nil {
		t.Fatal(err)
	}
	return reflect.DeepEqual(va, vb)
}

// TestDueSoonDocsExample: docs/notifications.md's warning in the json and
// slack formats is what nsman sends for it, the links' tokens aside (they
// are shown as t=...).
func TestDueSoonDocsExample(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "docs", "notifications.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(data), "\n### Warnings and links in each format\n")
	section, _, _ = strings.Cut(section, "\n## ")
	_, jsonBlock, okJSON := strings.Cut(section, "```json\n")
	jsonBlock, _, _ = strings.Cut(jsonBlock, "```")
	_, slackBlock, okSlack := strings.Cut(section, "- `slack`")
	_, slackBlock, _ = strings.Cut(slackBlock, "```\n")
	slackBlock, _, _ = strings.Cut(slackBlock, "```")
	if !ok || !okJSON || !okSlack {
		t.Fatalf("docs/notifications.md has no section on warnings in each format with a json and a slack example")
	}
	due, now := time.Date(2026, 12, 3, 14, 0, 0, 0, time.UTC), time.Date(2026, 12, 3, 12, 0, 31, 0, time.UTC)
	n := Notification{
		Manager: NotificationManager{Namespace: "team-a", Name: "preview-4711"}, Target: "preview-4711",
		Policy: "delete after a week", Action: policy.ActionDelete, Result: ResultPending, Event: EventDueSoon, Due: &due,
		Message: `policy "delete after a week" will DELETE namespace preview-4711 at 2026-12-03T14:00:00Z (warnBefore 1d)`,
		Time:    now, Sweep: "nsman-29400060-x7k2p-a1b2c3d4", Version: "v1.2.3",
		Links: NewLinker("https://nsman.example.com", []byte("docs")).For("preview-4711", "6f1c1a2e-0000-4000-8000-000000000001", now),
	}
	token := regexp.MustCompile(`link\?t=[A-Za-z0-9_.-]+`)
	if want := token.ReplaceAll(mustBody(t, NotifyJSON, n), []byte("link?t=...")); !sameJSON(t, []byte(jsonBlock), want) {
		t.Errorf("docs/notifications.md's json warning is not what nsman sends; it sends\n%s", want)
	}
	var slack struct{ Text string }
	if err := json.Unmarshal(mustBody(t, NotifySlack, n), &slack); err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(slackBlock), "\n") {
		lines = append(lines, strings.TrimSpace(l))
	}
	if want := token.ReplaceAllString(slack.Text, "link?t=..."); strings.Join(lines, "\n") != want {
		t.Errorf("docs/notifications.md's slack warning is not what nsman sends; it sends\n%s", want)
	}
}
