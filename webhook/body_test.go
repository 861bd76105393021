package webhook

import (
	"bytes"
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/nsman/nsman/test/fixtures/original"
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

// TestBodyMatchesJavaOperator rebuilds, from its parts, the body the
// original operator posts for its fourth scenario (the project's fixture
// test/fixtures/original/webhook-body.json, from the original README) and
// compares the JSON.
func TestBodyMatchesJavaOperator(t *testing.T) {
	data := original.Read(t, original.WebhookBodyFile)
	var javaBody bytes.Buffer
	if err := json.Compact(&javaBody, data); err != nil {
		t.Fatalf("%s: %v", original.WebhookBodyFile, err)
	}
	if !bytes.HasPrefix(javaBody.Bytes(), []byte(`{"namespaceManager":`)) {
		t.Fatalf("%s does not start with the manager: %s", original.WebhookBodyFile, javaBody.Bytes())
	}
	var java struct {
		NamespaceManager struct{ Namespace, Name string }
		Policy           map[string]any
		Namespace        string
	}
	if err := json.Unmarshal(javaBody.Bytes(), &java); err != nil {
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
	if err := json.Unmarshal(javaBody.Bytes(), &wantV); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(gotV, wantV) {
		t.Errorf("Body =\n%s\nJava operator sent\n%s", got, javaBody.Bytes())
	}
}
