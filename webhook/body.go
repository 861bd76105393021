package webhook

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// Body builds the JSON body the original Java operator posted, field for
// field, so that its receivers keep working:
//
//	{"namespaceManager":{"namespace":..,"name":..},"policy":{..},"namespace":..}
//
// policy is the policy object as stored in the manifest; target is the
// namespace the action is about.
func Body(managerNamespace, managerName string, policy map[string]any, target string) ([]byte, error) {
	type managerRef struct {
		Namespace string `json:"namespace"`
		Name      string `json:"name"`
	}
	payload := struct {
		NamespaceManager managerRef     `json:"namespaceManager"`
		Policy           map[string]any `json:"policy"`
		Namespace        string         `json:"namespace"`
	}{managerRef{managerNamespace, managerName}, policy, target}

	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	// Policies carry URLs with '&'; send them as written, as the Java
	// operator did, rather than as \u0026.
	enc.SetEscapeHTML(false)
	if err := enc.Encode(payload); err != nil {
		return nil, fmt.Errorf("webhook body: %w", err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
