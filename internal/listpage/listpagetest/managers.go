// Package listpagetest holds fixtures for the tests of the packages that
// decode lists: NamespaceManagers and pages of them as the API server
// lists them, and lists of metadata as protobuf. It needs the standard
// library and apimachinery only, as package listpage does, so that the
// fuzz target of package listpage builds small.
package listpagetest

import (
	"fmt"
	"strings"
)

// StoredManager is NamespaceManager i as the API server lists it after
// kubectl apply and a sweep: managed fields of both, kubectl's last-applied
// copy, a spec and a status.
func StoredManager(i int) string {
	name := fmt.Sprintf("team-%05d", i)
	return `{"apiVersion":"k8s.consol.de/v1beta1","kind":"NamespaceManager","metadata":{` +
		`"annotations":{"kubectl.kubernetes.io/last-applied-configuration":"{\"apiVersion\":\"k8s.consol.de/v1beta1\",\"kind\":\"NamespaceManager\",\"metadata\":{\"annotations\":{},\"name\":\"` + name + `\",\"namespace\":\"` + name + `\"},\"spec\":{\"policies\":[{\"action\":{\"type\":\"DELETE\"},\"condition\":{\"params\":{\"initialDelaySeconds\":30,\"podLabels\":{\"role\":\"e2e-test\"}},\"type\":\"PODS_SUCCEED\"},\"name\":\"delete when the e2e pods pass\"}]}}\n"},` +
		`"creationTimestamp":"2026-11-22T18:06:55Z","generation":1,"labels":{"team":"e2e"},` +
		`"managedFields":[{"apiVersion":"k8s.consol.de/v1beta1","fieldsType":"FieldsV1","fieldsV1":{"f:metadata":{"f:annotations":{".":{},"f:kubectl.kubernetes.io/last-applied-configuration":{}},"f:labels":{".":{},"f:team":{}}},"f:spec":{".":{},"f:policies":{}}},"manager":"kubectl-client-side-apply","operation":"Update","time":"2026-11-22T18:06:55Z"},` +
		`{"apiVersion":"k8s.consol.de/v1beta1","fieldsType":"FieldsV1","fieldsV1":{"f:status":{".":{},"f:conditions":{".":{},"k:{\"type\":\"Fired\"}":{".":{},"f:lastTransitionTime":{},"f:message":{},"f:observedGeneration":{},"f:reason":{},"f:status":{},"f:type":{}}},"f:message":{},"f:observedGeneration":{},"f:state":{},"f:target":{}}},"manager":"nsman","operation":"Update","subresource":"status","time":"2026-11-22T18:06:58Z"}],` +
		`"name":"` + name + `","namespace":"` + name + `","resourceVersion":"` + fmt.Sprint(1000+i) + `","uid":"00000000-0000-0000-0000-` + fmt.Sprintf("%012d", i) + `"},` +
		`"spec":{"policies":[{"action":{"type":"DELETE"},"condition":{"params":{"initialDelaySeconds":30,"podLabels":{"role":"e2e-test"}},"type":"PODS_SUCCEED"},"name":"delete when the e2e pods pass"}]},` +
		`"status":{"conditions":[{"lastTransitionTime":"2026-11-22T18:06:58Z","message":"not every pod matching role=e2e-test Succeeded: pod e2e has not succeeded","observedGeneration":1,"reason":"Waiting","status":"False","type":"Fired"}],` +
		`"message":"not every pod matching role=e2e-test Succeeded: pod e2e has not succeeded","observedGeneration":1,"state":"waiting","target":"` + name + `"}}`
}

// ListPage is a page of a NamespaceManager list holding items.
func ListPage(continueToken string, items ...string) string {
	return `{"apiVersion":"k8s.consol.de/v1beta1","kind":"NamespaceManagerList","metadata":{"continue":"` + continueToken +
		`","resourceVersion":"99"},"items":[` + strings.Join(items, ",") + `]}`
}
