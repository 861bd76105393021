package cmd

import (
	"strings"
	"testing"
	"time"
)

// sleepPatching is a manager whose SLEEP patches the objects of kind by
// patch (YAML, a flow mapping).
func sleepPatching(kind, patch string) string {
	return `apiVersion: k8s.consol.de/v1beta1
kind: NamespaceManager
metadata:
  name: nights
  namespace: namespace-manager
spec:
  namespace: team-a
  policies:
    - name: nights
      condition:
        type: TTL
        params:
          ttlSeconds: 0
      windows:
        - from: "20:00"
          to: "07:00"
      action:
        type: SLEEP
        params:
          patches:
            - kind: ` + kind + `
              patch: ` + patch + `
`
}

// TestValidatePatches: nsman validate refuses a patch that nsman must not
// write, at the field it touches, beyond what the CRD can see of a patch
// (whose fields no schema declares): an object's identity or status, a
// kind of Kubernetes' own APIs, nsman's own annotations.
func TestValidatePatches(t *testing.T) {
	const p = "spec.policies[0].action.params.patches[0]"
	tests := []struct {
		name        string
		kind, patch string
		want        string // the problem, "" for valid
	}{
		{"a HelmRelease suspended", "HelmRelease.helm.toolkit.fluxcd.io", `{spec: {suspend: true}}`, ""},
		{"labels and annotations", "HelmRelease.helm.toolkit.fluxcd.io", `{metadata: {labels: {asleep: "yes"}, annotations: {example.com/old: null}}}`, ""},
		{"metadata.name", "HelmRelease.helm.toolkit.fluxcd.io", `{metadata: {name: other}}`,
			p + ".patch.metadata.name: Forbidden: a patch may change an object's labels and annotations, no other metadata"},
		{"status", "HelmRelease.helm.toolkit.fluxcd.io", `{status: {ready: true}}`,
			p + ".patch.status: Forbidden: a patch may not write an object's status, which its controller owns"},
		{"a kind of k8s.io", "ClusterRole.rbac.authorization.k8s.io", `{rules: []}`,
			p + `.kind: Invalid value: "ClusterRole.rbac.authorization.k8s.io": is a kind of Kubernetes' own APIs (*.k8s.io), which nsman does not patch`},
		{"nsman's annotation", "HelmRelease.helm.toolkit.fluxcd.io", `{metadata: {annotations: {nsman.k8s.consol.de/touched: "2026-12-24T00:00:00Z"}}}`,
			p + ".patch.metadata.annotations[nsman.k8s.consol.de/touched]: Forbidden: is nsman's own (nsman.k8s.consol.de/*): a patch may not write or remove nsman's records"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			report, err := validateManifests("nights.yaml", strings.NewReader(sleepPatching(tt.kind, tt.patch)), time.Now())
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, m := range report.invalid {
				for _, e := range m.errs {
					got = append(got, describeFieldError(e))
				}
			}
			switch {
			case tt.want == "" && len(got) > 0:
				t.Errorf("invalid: %q", got)
			case tt.want != "" && (len(got) != 1 || got[0] != tt.want):
				t.Errorf("problems %q, want %q", got, tt.want)
			}
		})
	}
	// The command refuses one, as a sweep would.
	dir := t.TempDir()
	writeTestFiles(t, dir, map[string]string{"status.yaml": sleepPatching("HelmRelease.helm.toolkit.fluxcd.io", `{status: {ready: true}}`)})
	t.Chdir(dir)
	if code, stdout, _ := runValidate(t, "", "-f", "status.yaml"); code != ExitFailed || !strings.Contains(stdout, "status.yaml: namespace-manager/nights: "+p+".patch.status: Forbidden: ") {
		t.Errorf("exit %d, stdout %q; want the patch of status refused", code, stdout)
	}
}
