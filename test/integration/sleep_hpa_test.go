package integration

import (
	"context"
	"fmt"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	"github.com/nsman/nsman/internal/cluster"
	nsmanwrite "github.com/nsman/nsman/internal/write"
	"github.com/nsman/nsman/report"
)

// hpaScalingActive waits until the HPA name in ns says why it is or is not
// scaling with reason, as kube-controller-manager's HPA controller sets it.
func hpaScalingActive(t *testing.T, ns, name, reason string) {
	t.Helper()
	var last string
	err := wait.PollUntilContextTimeout(t.Context(), 250*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		hpa, err := shared.Admin.AutoscalingV2().HorizontalPodAutoscalers(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, c := range hpa.Status.Conditions {
			if c.Type == autoscalingv2.ScalingActive {
				last = fmt.Sprintf("%s %s: %s", c.Status, c.Reason, c.Message)
				return c.Reason == reason, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("HPA %s/%s ScalingActive is %q, want reason %s: %v", ns, name, last, reason, err)
	}
}

// An HPA whose Deployment nsman puts to sleep stops acting on it (the HPA
// controller disables scaling for a target at zero), so the sleep holds
// against the HPA's minReplicas; after the wake the HPA acts again. No
// metrics API runs here, so an acting HPA says FailedGetResourceMetric.
func TestSleepStopsTheHPA(t *testing.T) {
	e := setup(t)
	ns := sleepyNamespace(t)
	hpa := &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"},
			MinReplicas:    ptr.To[int32](1),
			MaxReplicas:    4,
			Metrics: []autoscalingv2.MetricSpec{{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
				Name:   corev1.ResourceCPU,
				Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr.To[int32](50)},
			}}},
		},
	}
	if _, err := shared.Admin.AutoscalingV2().HorizontalPodAutoscalers(ns).Create(t.Context(), hpa, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	hpaScalingActive(t, ns, "web", "FailedGetResourceMetric")

	wantState(t, e.Sweep(t, "-l", caseLabel+"="+ns), ns, ns, report.StateFired)
	wantWorkload(t, ns, "web", 0, "2")
	hpaScalingActive(t, ns, "web", "ScalingDisabled")
	wantWorkload(t, ns, "web", 0, "2")
	wantState(t, e.Sweep(t, "-l", caseLabel+"="+ns), ns, ns, report.StateAsleep)

	patch := fmt.Appendf(nil, `{"spec":{"policies":[%s]}}`, nsmanwrite.MustJSON(sleepPolicy(3*time.Hour, 4*time.Hour)))
	if _, err := env.Dynamic.Resource(cluster.ManagerResource).Namespace(ns).Patch(t.Context(), ns, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	if woke := wantState(t, e.Sweep(t, "-l", caseLabel+"="+ns), ns, ns, report.StateFired); !woke.Woke {
		t.Errorf("entry %+v, want a wake", woke)
	}
	wantWorkload(t, ns, "web", 2, "")
	hpaScalingActive(t, ns, "web", "FailedGetResourceMetric")
}
