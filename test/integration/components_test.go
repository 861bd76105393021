package integration

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/nsman/nsman/test/nsmantest"
)

// componentsKustomization writes a kustomization of the base and the named
// components of deploy/components into a directory of t's and returns that
// directory, relative to the repository (as kustomize takes it).
func componentsKustomization(t *testing.T, text string) string {
	t.Helper()
	dir := t.TempDir()
	deploy, err := filepath.Rel(dir, filepath.Join(nsmantest.RepoRoot(), "deploy"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(strings.ReplaceAll(text, "DEPLOY", deploy)), 0o600); err != nil {
		t.Fatal(err)
	}
	rel, err := filepath.Rel(nsmantest.RepoRoot(), dir)
	if err != nil {
		t.Fatal(err)
	}
	return rel
}

// combinedSnippet is the kustomization docs/kustomize.md shows under
// "Combining overlays", its path to a checkout's deploy/ as DEPLOY.
func combinedSnippet(t *testing.T) string {
	t.Helper()
	docs, err := os.ReadFile(filepath.Join(nsmantest.RepoRoot(), "docs", "kustomize.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(docs), "\n## Combining overlays\n")
	if !ok {
		t.Fatal("docs/kustomize.md has no section \"Combining overlays\"")
	}
	_, block, ok := strings.Cut(section, "```yaml\n")
	if !ok {
		t.Fatal("docs/kustomize.md: no yaml block in \"Combining overlays\"")
	}
	block, _, _ = strings.Cut(block, "```")
	if !strings.Contains(block, "../nsman/deploy/components/") {
		t.Fatalf("the kustomization in docs/kustomize.md names no component of ../nsman/deploy/components:\n%s", block)
	}
	return strings.ReplaceAll(block, "../nsman/deploy", "DEPLOY")
}

// TestComponentsCombine: the overlays' components go together. Built all
// eight at once, and as docs/kustomize.md combines four, the result is the
// base plus what each component's overlay adds alone: its flags, appended
// in the components' order, its volumes and mounts, its objects, its Job
// settings; the CronJob and its pod are admitted under Pod Security
// restricted, and the admission policy agrees with the CronJob and lets a
// sleep's patches change what flux-suspend says, when it is among them.
func TestComponentsCombine(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	base := kustomize(ctx, t, "deploy")
	baseCJ := typedCronJob(t, cronJobObject(t, base))
	baseArgs := nsmanContainer(t, baseCJ).Args
	ns := restrictedNamespace(t)
	entries, err := os.ReadDir(filepath.Join(nsmantest.RepoRoot(), "deploy", "components"))
	if err != nil {
		t.Fatal(err)
	}
	var all []string
	for _, e := range entries {
		all = append(all, e.Name())
	}
	if len(all) != 8 {
		t.Fatalf("deploy/components holds %q, want the eight overlays' components", all)
	}
	// What each overlay, the base and one component, adds to the base.
	type addition struct {
		args    []string
		volumes []corev1.Volume
		objects []string
		job     batchv1.JobSpec
	}
	alone := map[string]addition{}
	for _, c := range all {
		objs := kustomize(ctx, t, filepath.Join("deploy", "overlays", c))
		cj := typedCronJob(t, cronJobObject(t, objs))
		a := addition{args: nsmanContainer(t, cj).Args[len(baseArgs):], volumes: cj.Spec.JobTemplate.Spec.Template.Spec.Volumes, job: cj.Spec.JobTemplate.Spec}
		for _, id := range identities(objs) {
			if !slices.Contains(identities(base), id) {
				a.objects = append(a.objects, id)
			}
		}
		alone[c] = a
	}

	for name, text := range map[string]string{
		"all eight":           "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [DEPLOY/base]\ncomponents:\n  - DEPLOY/components/" + strings.Join(all, "\n  - DEPLOY/components/") + "\n",
		"docs/kustomize.md's": combinedSnippet(t),
	} {
		t.Run(name, func(t *testing.T) {
			dir := componentsKustomization(t, text)
			var used []string
			for _, line := range strings.Split(text, "\n") {
				if _, c, ok := strings.Cut(line, "DEPLOY/components/"); ok {
					used = append(used, strings.TrimSpace(c))
				}
			}
			objs := kustomize(ctx, t, dir)
			obj := cronJobObject(t, objs)
			cj := typedCronJob(t, obj)
			wantArgs, wantObjects := slices.Clone(baseArgs), identities(base)
			var wantVolumes []string
			for _, c := range used {
				wantArgs = append(wantArgs, alone[c].args...)
				wantObjects = append(wantObjects, alone[c].objects...)
				for _, v := range alone[c].volumes {
					wantVolumes = append(wantVolumes, v.Name)
				}
				if alone[c].job.CompletionMode != nil && !equalPtr(cj.Spec.JobTemplate.Spec.CompletionMode, alone[c].job.CompletionMode) {
					t.Errorf("completionMode %v, want %s's %v", ptrString(cj.Spec.JobTemplate.Spec.CompletionMode), c, *alone[c].job.CompletionMode)
				}
			}
			if got := nsmanContainer(t, cj).Args; !slices.Equal(got, wantArgs) {
				t.Errorf("args %q, want the base's and each component's, in order: %q", got, wantArgs)
			}
			slices.Sort(wantObjects)
			if got := identities(objs); !slices.Equal(got, wantObjects) {
				t.Errorf("objects %q, want %q", got, wantObjects)
			}
			var gotVolumes []string
			for _, v := range cj.Spec.JobTemplate.Spec.Template.Spec.Volumes {
				gotVolumes = append(gotVolumes, v.Name)
			}
			slices.Sort(gotVolumes)
			slices.Sort(wantVolumes)
			if !slices.Equal(gotVolumes, wantVolumes) {
				t.Errorf("volumes %q, want each component's once: %q", gotVolumes, wantVolumes)
			}
			if len(nsmanContainer(t, cj).VolumeMounts) != len(wantVolumes) {
				t.Errorf("mounts %+v, want one per volume %q", nsmanContainer(t, cj).VolumeMounts, wantVolumes)
			}
			wantPolicyAgrees(t, objs)
			wantPatchable := "{}"
			if slices.Contains(used, "flux-suspend") {
				wantPatchable = fluxSuspendPatchable
			}
			if vars := typedPolicy(t, findNamed(t, objs, policyKind, "nsman")).Spec.Variables; vars[nsmantest.PatchableIndex].Expression != wantPatchable {
				t.Errorf("the policy's %s is %s, want %s", vars[nsmantest.PatchableIndex].Name, vars[nsmantest.PatchableIndex].Expression, wantPatchable)
			}
			if warned, err := createCronJobDryRun(ctx, obj, ns); err != nil || len(warned) > 0 {
				t.Fatalf("CronJob: %v, warnings %q", err, warned)
			}
			if err := createPodDryRun(ctx, ns, podFrom(cj)); err != nil {
				t.Fatalf("pod rejected under Pod Security restricted: %v", err)
			}
		})
	}
}

func equalPtr[T comparable](a, b *T) bool {
	return a != nil && b != nil && *a == *b
}
