package nsmantest

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// Deployment is a Deployment named name, labelled app=name, with replicas
// pods of a placeholder image: a workload for SCALE_DOWN to act on.
func Deployment(name string, replicas int32) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "registry.invalid/" + name + ":1"}}},
			},
		},
	}
}

// staticNode is a Node no kwok manages: pods bound to it keep whatever phase
// a test writes into their status.
const staticNode = "static-node"

// PodWithPhase creates, as admin, a pod on the static node and sets its
// phase, which then stays as set.
func PodWithPhase(t testing.TB, admin kubernetes.Interface, ns, name string, labels map[string]string, phase corev1.PodPhase) {
	t.Helper()
	CreatePod(t, admin, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "registry.invalid/test:1"}}},
	}, phase)
}

// CreatePod creates pod, bound to a node that runs nothing (so that no
// kubelet changes it), and sets its phase.
func CreatePod(t testing.TB, admin kubernetes.Interface, pod *corev1.Pod, phase corev1.PodPhase) {
	t.Helper()
	ctx := t.Context()
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: staticNode}}
	if _, err := admin.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	pod.Spec.NodeName, pod.Spec.RestartPolicy = staticNode, corev1.RestartPolicyNever
	pod.Spec.Tolerations = []corev1.Toleration{{Operator: corev1.TolerationOpExists}}
	created, err := admin.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	created.Status.Phase = phase
	if _, err := admin.CoreV1().Pods(pod.Namespace).UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}
