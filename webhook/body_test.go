package webhook

import (
	"encoding/json"
	"math"
	"os"
	"reflect"
	"strings"
	"testing"
)

func TestBody(t *testing.T) {
	tests := []struct {
		name    string
		mgrNS   string
		mgrName string
		policy  map[string]any
		target  string
		want    string
	}{
		{
			name:    "top-level fields in the Java operator's order",
			mgrNS:   "team-a",
			mgrName: "e2e",
			policy: map[string]any{
				"name":      "notify",
				"condition": map[string]any{"type": "PODS_SUCCEED", "params": map[string]any{"podLabels": map[string]any{"component": "main"}}},
				"action":    map[string]any{"type": "WEBHOOK", "params": map[string]any{"url": "http://hook.team-a.svc/x"}},
			},
			target: "e2e-run-1",
			want: `{"namespaceManager":{"namespace":"team-a","name":"e2e"},` +
				`"policy":{"action":{"params":{"url":"http://hook.team-a.svc/x"},"type":"WEBHOOK"},"condition":{"params":{"podLabels":{"component":"main"}},"type":"PODS_SUCCEED"},"name":"notify"},` +
				`"namespace":"e2e-run-1"}`,
		},
		{
			name:    "URL query and markup are sent as written",
			mgrNS:   "ns",
			mgrName: "m",
			policy:  map[string]any{"action": map[string]any{"params": map[string]any{"url": "https://h/p?a=1&b=<2>"}}},
			target:  "ns",
			want:    `{"namespaceManager":{"namespace":"ns","name":"m"},"policy":{"action":{"params":{"url":"https://h/p?a=1&b=<2>"}}},"namespace":"ns"}`,
		},
		{
			name:    "fields unknown to nsman are kept",
			mgrNS:   "ns",
			mgrName: "m",
			policy:  map[string]any{"name": "p", "x-extra": []any{1.5, true, nil}},
			target:  "other",
			want:    `{"namespaceManager":{"namespace":"ns","name":"m"},"policy":{"name":"p","x-extra":[1.5,true,null]},"namespace":"other"}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Body(tt.mgrNS, tt.mgrName, tt.policy, tt.target)
			if err != nil {
				t.Fatalf("Body: %v", err)
			}
			if string(got) != tt.want {
				t.Errorf("Body =\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}

func TestBodyRejectsUnencodablePolicy(t *testing.T) {
	_, err := Body("ns", "m", map[string]any{"n": math.NaN()}, "ns")
	if err == nil || !strings.HasPrefix(err.Error(), "webhook body: ") {
		t.Fatalf("Body(NaN) error = %v, want a webhook body error", err)
	}
}

// TestBodyMatchesJavaOperator rebuilds the body the original operator
// posted in its README's example-04 from its parts and compares the JSON.
func TestBodyMatchesJavaOperator(t *testing.T) {
	const seed = "../../shared/reference/seeds/000_d14b9f13bfc78ed6.txt"
	data, err := os.ReadFile(seed)
	if err != nil {
		t.Skipf("reference not available: %v", err)
	}
	var javaBody string
	for line := range strings.Lines(string(data)) {
		if strings.HasPrefix(line, `{"namespaceManager":`) {
			javaBody = strings.TrimSpace(line)
			break
		}
	}
	if javaBody == "" {
		t.Fatalf("no webhook body in %s", seed)
	}
	var java struct {
		NamespaceManager struct{ Namespace, Name string }
		Policy           map[string]any
		Namespace        string
	}
	if err := json.Unmarshal([]byte(javaBody), &java); err != nil {
		t.Fatal(err)
	}

	got, err := Body(java.NamespaceManager.Namespace, java.NamespaceManager.Name, java.Policy, java.Namespace)
	if err != nil {
		t.Fatal(err)
	}
	var gotV, wantV any
	if err := json.Unmarshal(got, &gotV); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(javaBody), &wantV); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(gotV, wantV) {
		t.Errorf("Body =\n%s\nJava operator sent\n%s", got, javaBody)
	}
}
