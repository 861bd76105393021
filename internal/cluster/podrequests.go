package cluster

import corev1 "k8s.io/api/core/v1"

// PodRequests is what the requests of a pod (or a pod template) are
// computed from: a list of pods or workloads is decoded into it, one at a
// time, whatever else they hold.
type PodRequests struct {
	Containers     []containerRequests          `json:"containers,omitempty"`
	InitContainers []containerRequests          `json:"initContainers,omitempty"`
	Overhead       corev1.ResourceList          `json:"overhead,omitempty"`
	Resources      *corev1.ResourceRequirements `json:"resources,omitempty"`
}

type containerRequests struct {
	Resources     corev1.ResourceRequirements    `json:"resources"`
	RestartPolicy *corev1.ContainerRestartPolicy `json:"restartPolicy,omitempty"`
}

// Spec is p as a PodSpec, for resourcehelper.
func (p PodRequests) Spec() corev1.PodSpec {
	containers := func(cs []containerRequests) []corev1.Container {
		out := make([]corev1.Container, len(cs))
		for i, c := range cs {
			out[i] = corev1.Container{Resources: c.Resources, RestartPolicy: c.RestartPolicy}
		}
		return out
	}
	return corev1.PodSpec{Containers: containers(p.Containers), InitContainers: containers(p.InitContainers), Overhead: p.Overhead, Resources: p.Resources}
}
