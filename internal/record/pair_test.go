package record

import (
	"context"
	"maps"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	kubefake "k8s.io/client-go/kubernetes/fake"

	"github.com/nsman/nsman/internal/cluster"
	"github.com/nsman/nsman/internal/status"
	"github.com/nsman/nsman/internal/write"
	"github.com/nsman/nsman/policy"
	"github.com/nsman/nsman/report"
)

// TestRecordOfReadsTheLegacyKey: a record written under the rule's UID
// (legacyPairAnnotation) is the rule's while none is under its
// PairAnnotation; the newer one wins.
func TestRecordOfReadsTheLegacyKey(t *testing.T) {
	uid := types.UID("0b6f2c1e-5d0a-4b8e-9a61-7e3f1c2d4a5b")
	key, legacy := status.PairAnnotation(uid), status.LegacyPairAnnotation(uid)
	for _, tc := range []struct {
		name          string
		pairs         map[string]string
		wantRaw, want string
	}{
		{"none", nil, "", ""},
		{"legacy", map[string]string{legacy: "old"}, "old", legacy},
		{"current", map[string]string{key: "new"}, "new", key},
		{"both", map[string]string{key: "new", legacy: "old"}, "new", key},
		{"another rule's", map[string]string{status.PairAnnotation("other"): "x"}, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			raw, at := Of(cluster.Namespace{Pairs: cluster.AnnotationsOf(tc.pairs)}, key, legacy)
			if raw != tc.wantRaw || at != tc.want {
				t.Errorf("recordOf: %q at %q, want %q at %q", raw, at, tc.wantRaw, tc.want)
			}
		})
	}
	if live := status.PairAnnotations(map[types.UID]bool{uid: true}); !live[key] || !live[legacy] || len(live) != 2 {
		t.Errorf("pairAnnotations: %v, want %s and %s", live, key, legacy)
	}
}

// namespacePatcher applies namespace patches to a fake clientset, which
// applies JSON patches as the API server does; it is no other writer.
type namespacePatcher struct {
	write.Writer
	kube *kubefake.Clientset
}

func (w namespacePatcher) PatchNamespace(ctx context.Context, name string, p write.Patch) error {
	_, err := w.kube.CoreV1().Namespaces().Patch(ctx, name, p.Type(), p.Body, metav1.PatchOptions{})
	return err
}

// TestReplaceMovesALegacyRecord: a record written after an action
// replaces one listed under the legacy key with the record under the key
// that hides the UID, only if the listed one is still there as listed.
func TestReplaceMovesALegacyRecord(t *testing.T) {
	uid := types.UID("0b6f2c1e-5d0a-4b8e-9a61-7e3f1c2d4a5b")
	key, legacy := status.PairAnnotation(uid), status.LegacyPairAnnotation(uid)
	was := write.MustJSON(status.PairStatus{Rule: "home/rule", Progress: status.Progress{IgnoredHold: "x"}})
	next := status.PairStatus{Rule: "home/rule", Progress: status.Progress{LastAction: &status.LastAction{Policy: "p", Action: policy.ActionDelete, Result: report.ResultFailed}}}
	for _, tc := range []struct {
		name    string
		now     string // the legacy record when the patch is sent
		wantErr bool
	}{
		{"as listed", was, false},
		{"changed since", write.MustJSON(status.PairStatus{Rule: "home/rule"}), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kube := kubefake.NewClientset(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a", UID: "ns-uid", Annotations: map[string]string{legacy: tc.now, "other": "kept"}}})
			pr := &Pair{Env: Env{Writer: namespacePatcher{kube: kube}}, Key: key, Legacy: legacy, At: legacy,
				Namespace: cluster.Namespace{Name: "team-a", UID: "ns-uid", Pairs: cluster.AnnotationsOf(map[string]string{legacy: was})}}
			err := pr.replace(t.Context(), pr.At, was, next)
			ns, getErr := kube.CoreV1().Namespaces().Get(t.Context(), "team-a", metav1.GetOptions{})
			if getErr != nil {
				t.Fatal(getErr)
			}
			want := map[string]string{key: write.MustJSON(next), "other": "kept"}
			if tc.wantErr {
				want = map[string]string{legacy: tc.now, "other": "kept"}
			}
			if (err != nil) != tc.wantErr || !maps.Equal(ns.Annotations, want) {
				t.Errorf("replace: %v, annotations %v; want error %v, annotations %v", err, ns.Annotations, tc.wantErr, want)
			}
		})
	}
}
