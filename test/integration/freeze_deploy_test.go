package integration

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	"github.com/nsman/nsman/internal/decide"
)

// The freeze calendar as the chart and the freeze overlay mount it: the
// ConfigMap (the chart's for release nsman, the overlay's), and where
// --freeze-file reads it.
const (
	freezeConfigMap = "nsman-freeze"
	freezeDir       = "/etc/nsman/freeze"
	freezeFileFlag  = "--freeze-file=" + freezeDir + "/calendar"
)

// jsonString is s as a JSON string, for helm --set-json.
func jsonString(t *testing.T, s string) string {
	t.Helper()
	data, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// writeCalendar writes calendar to a file of t's and returns its path.
func writeCalendar(t *testing.T, calendar string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "calendar")
	if err := os.WriteFile(path, []byte(calendar), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// parseCalendar reads calendar as nsman's --freeze-file does, its dates in
// zone, and fails t unless every line parses.
func parseCalendar(t *testing.T, calendar, zone string) []decide.Freeze {
	t.Helper()
	loc, err := time.LoadLocation(zone)
	if err != nil {
		t.Fatalf("--freeze-time-zone=%s: %v", zone, err)
	}
	freezes, err := decide.ReadFreezes(strings.NewReader(calendar), "calendar", loc)
	if err != nil {
		t.Fatalf("the calendar does not parse: %v\n%s", err, calendar)
	}
	return freezes
}

// freezeOverlayTimeZone is the time zone the freeze overlay passes.
const freezeOverlayTimeZone = "Europe/Berlin"

// checkFreezeOverlay checks the freeze overlay's CronJob: the base's
// arguments, then --freeze-file and --freeze-time-zone; the ConfigMap's
// calendar mounted read-only where --freeze-file reads it.
func checkFreezeOverlay(t *testing.T, cj *batchv1.CronJob, baseArgs []string) {
	t.Helper()
	c := nsmanContainer(t, cj)
	if want := append(slices.Clone(baseArgs), freezeFileFlag, "--freeze-time-zone="+freezeOverlayTimeZone); !slices.Equal(c.Args, want) {
		t.Errorf("args %q, want %q", c.Args, want)
	}
	vols := cj.Spec.JobTemplate.Spec.Template.Spec.Volumes
	if len(vols) != 1 || vols[0].ConfigMap == nil || vols[0].ConfigMap.Name != freezeConfigMap || !slices.Equal(vols[0].ConfigMap.Items, []corev1.KeyToPath{{Key: "calendar", Path: "calendar"}}) {
		t.Fatalf("volumes %+v, want ConfigMap %s's calendar alone", vols, freezeConfigMap)
	}
	if ptr.Deref(vols[0].ConfigMap.Optional, false) {
		t.Error("ConfigMap volume optional: nsman would sweep without its calendar")
	}
	if !slices.Equal(c.VolumeMounts, []corev1.VolumeMount{{Name: vols[0].Name, MountPath: freezeDir, ReadOnly: true}}) {
		t.Errorf("mounts %+v, want %s read-only at %s", c.VolumeMounts, vols[0].Name, freezeDir)
	}
}

// checkFreezeCalendar checks the ConfigMap the freeze overlay adds: in the
// CronJob's namespace, the calendar alone, which parses in the overlay's
// time zone; and that nsman takes the CronJob's arguments with it (a dry
// run with them, the calendar a file of the ConfigMap's).
func checkFreezeCalendar(t *testing.T, cj *batchv1.CronJob, objs []*unstructured.Unstructured) {
	t.Helper()
	if len(objs) != 1 {
		t.Fatalf("%d objects added, want the ConfigMap alone", len(objs))
	}
	cm := &corev1.ConfigMap{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(objs[0].Object, cm, true); err != nil {
		t.Fatalf("ConfigMap %s: %v", objs[0].GetName(), err)
	}
	if cm.Namespace != cj.Namespace || cm.Name != freezeConfigMap {
		t.Errorf("ConfigMap %s/%s, want %s/%s", cm.Namespace, cm.Name, cj.Namespace, freezeConfigMap)
	}
	calendar, ok := cm.Data["calendar"]
	if len(cm.Data) != 1 || !ok || len(cm.BinaryData) > 0 {
		t.Fatalf("ConfigMap data %q, want the calendar alone", cm.Data)
	}
	if freezes := parseCalendar(t, calendar, freezeOverlayTimeZone); len(freezes) < 2 {
		t.Errorf("calendar %q: %d ranges, want a few examples", calendar, len(freezes))
	}

	e := setup(t)
	args := nsmanContainer(t, cj).Args
	if len(args) == 0 || args[0] != "sweep" {
		t.Fatalf("args %q, want the sweep command first", args)
	}
	var run []string
	for _, a := range args[1:] {
		if a == freezeFileFlag {
			a = "--freeze-file=" + writeCalendar(t, calendar)
		}
		run = append(run, a)
	}
	res := e.Sweep(t, append(run, "--dry-run", "-n", shared.Namespace(t))...)
	wantCode(t, res, 0)
	if !res.Report.Summary.DryRun {
		t.Error("the sweep was no dry run")
	}
}
