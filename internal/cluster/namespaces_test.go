package cluster

import (
	"bytes"
	"encoding/json"
	"maps"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nsman/nsman/internal/listpage"
	"github.com/nsman/nsman/internal/listpage/listpagetest"
	"github.com/nsman/nsman/internal/owner"
	"github.com/nsman/nsman/internal/status"
	"github.com/nsman/nsman/policy"
)

// trackingID is Argo CD's annotation naming an owner, which a sweep keeps.
const trackingID = "argocd.argoproj.io/tracking-id"

// A namespace is kept as namespaceInfoOf reads it: its name, uid, version,
// times and labels as listed; of its annotations, nsman's alone, a hold,
// wake, expiry date or touch cut at maxNamespaceValue, a rule's record
// whole, the owner markers (nsman's and Argo CD's tracking id) cut at
// owner.MaxMarker+1, the notify channel at maxNotifyChannel. 200 KiB of a tenant's own annotations are not kept. So it is from
// JSON and from protobuf, which the API server sends nsman.
func TestNamespaceListKeepsWhatIsRead(t *testing.T) {
	created := metav1.NewTime(time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC))
	deleting := metav1.NewTime(created.Add(time.Hour))
	record := `{"rule":"namespace-manager/leftovers","fired":["delete"]}`
	long := strings.Repeat("9", 1024)
	listed := metav1.PartialObjectMetadataList{Items: []metav1.PartialObjectMetadata{
		{ObjectMeta: metav1.ObjectMeta{Name: "team-a", UID: "u-a", ResourceVersion: "7", CreationTimestamp: created, Labels: map[string]string{"team": "a"},
			Annotations: map[string]string{"example.com/blob": strings.Repeat("x", 200<<10), status.HoldAnnotation: "2026-12-01T09:00:00Z",
				status.PairAnnotationPrefix + "0123": record, policy.TouchedAnnotation: long, policy.ExpiresAnnotation: "2026-12-24",
				status.WakeAnnotation: "2026-11-01T20:00:00Z" + long, policy.OwnerAnnotation: "applications.argoproj.io/argocd/pr-12",
				trackingID: strings.Repeat("t", 200<<10), status.NotifyChannelAnnotation: "team-a" + long}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "gone", UID: "u-g", ResourceVersion: "8", CreationTimestamp: created, DeletionTimestamp: &deleting}},
	}}
	listed.Continue = "next"
	asJSON, err := json.Marshal(listed)
	if err != nil {
		t.Fatal(err)
	}
	asProtobuf, err := listpagetest.ProtobufMetadata(&listed)
	if err != nil {
		t.Fatal(err)
	}
	for encoding, data := range map[string][]byte{"json": asJSON, "protobuf": asProtobuf} {
		t.Run(encoding, func(t *testing.T) { keepsWhatIsRead(t, listed, data) })
	}
}

// keepsWhatIsRead decodes data, the list listed in some encoding, as the
// sweep does, and checks what it keeps (see
// TestNamespaceListKeepsWhatIsRead).
func keepsWhatIsRead(t *testing.T, listed metav1.PartialObjectMetadataList, data []byte) {
	long := strings.Repeat("9", 1024)
	deleting := listed.Items[1].DeletionTimestamp
	var got []*metav1.PartialObjectMetadata
	meta, err := listpage.DecodeMetadata(bytes.NewReader(data), func(it *namespaceItem) error {
		got = append(got, it.metadata())
		return nil
	}, namespaceItemOf)
	if err != nil {
		t.Fatal(err)
	}
	if meta.Continue != "next" || len(got) != 2 {
		t.Fatalf("continue %q, %d namespaces; want next and 2", meta.Continue, len(got))
	}
	want := listed.Items[0].DeepCopy()
	delete(want.Annotations, "example.com/blob")
	want.Annotations[policy.TouchedAnnotation] = long[:maxNamespaceValue]
	want.Annotations[status.WakeAnnotation] = want.Annotations[status.WakeAnnotation][:maxNamespaceValue]
	want.Annotations[trackingID] = want.Annotations[trackingID][:owner.MaxMarker+1]
	want.Annotations[status.NotifyChannelAnnotation] = want.Annotations[status.NotifyChannelAnnotation][:maxNotifyChannel]
	if !equality.Semantic.DeepEqual(got[0].ObjectMeta, want.ObjectMeta) {
		t.Errorf("kept %+v\nwant %+v", got[0].ObjectMeta, want.ObjectMeta)
	}
	info := NamespaceOf(got[0])
	if info.Wake != want.Annotations[status.WakeAnnotation] || info.Hold != "2026-12-01T09:00:00Z" {
		t.Errorf("wake %q, hold %q; want the wake as kept, the hold as listed", info.Wake, info.Hold)
	}
	if info.NotifyChannel != want.Annotations[status.NotifyChannelAnnotation] {
		t.Errorf("notify channel %q, want it cut at maxNotifyChannel", info.NotifyChannel)
	}
	if markers := map[string]string{policy.OwnerAnnotation: "applications.argoproj.io/argocd/pr-12", trackingID: want.Annotations[trackingID]}; !maps.Equal(info.OwnerMarkers.Map(), markers) {
		t.Errorf("owner markers %.80q, want nsman's as listed and the tracking id cut", info.OwnerMarkers)
	}
	if info := NamespaceOf(got[1]); info.Name != "gone" || !info.Terminating || !info.Deleting.Equal(deleting.Time) || info.UID != "u-g" {
		t.Errorf("terminating namespace read as %+v", info)
	}
	kept := 0
	for k, v := range got[0].Annotations {
		kept += len(k) + len(v)
	}
	if kept > 1<<10+2*(owner.MaxMarker+1+len(trackingID)) {
		t.Errorf("%d bytes of annotations kept of a namespace, want what nsman reads (under 1 KiB, and two owner markers)", kept)
	}
}
