package tell

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
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
// docs/webhooks.md with an example body, and the chart's notify.format.
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
	webhooks, values, helm := string(read("docs/webhooks.md")), string(read("deploy/helm/nsman/values.yaml")), string(read("docs/helm.md"))
	_, notifyValues, _ := strings.Cut(values, "\nnotify:\n")
	notifyValues, _, _ = strings.Cut(notifyValues, "\n  format:")
	_, helmRow, _ := strings.Cut(helm, "| `notify.format` |")
	helmRow, _, _ = strings.Cut(helmRow, "\n")
	for _, name := range FormatNames() {
		section := "\n#### `--notify-format " + name + "`\n"
		_, rest, ok := strings.Cut(webhooks, section)
		text, _, _ := strings.Cut(rest, "\n#")
		_, example, found := strings.Cut(text, "```json\n")
		example, _, _ = strings.Cut(example, "```")
		if !ok || !found {
			t.Errorf("docs/webhooks.md has no section %q with an example body", strings.TrimSpace(section))
		} else if want := mustBody(t, name, docsExample); !sameJSON(t, []byte(example), want) {
			t.Errorf("docs/webhooks.md's example of %s is not what nsman sends; it sends\n%s", name, want)
		}
		if !strings.Contains(helmRow, "`"+name+"`") {
			t.Errorf("docs/helm.md's notify.format row does not name %s: %s", name, helmRow)
		}
		if !strings.Contains(notifyValues, " "+name+" (") {
			t.Errorf("values.yaml's notify.format does not describe %s", name)
		}
	}
}

// docsExample is the notification docs/webhooks.md shows in each format.
var docsExample = Notification{
	Manager: NotificationManager{Namespace: "team-a", Name: "preview-4711"}, Target: "preview-4711",
	Policy: "delete after eight hours", Action: policy.ActionDelete, Result: report.ResultSucceeded,
	Message: "TTL 8h0m0s elapsed at 2026-11-23T17:00:00Z", Effects: []string{"delete namespace preview-4711"},
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
