// Command trafficfloor is the process floor of make bench's traffic part
// (test/bench/traffic_test.go): a minimal client that starts as a process
// of its own, as nsman does, builds client-go clients from a kubeconfig,
// makes the reads of the part's in-process floor, in its order (one paged
// LIST of the NamespaceManagers, then, metadata only and paged, of the
// namespaces, ReplicaSets, ControllerRevisions, Jobs and pods, then the
// preset's Prometheus query, once, through internal/prom's client),
// checks that the query answered requests for every namespace it should,
// and exits. It prints what it read as one line of JSON; it exits 1 on an
// error or a wrong answer. The generator builds it with go build, as it
// builds nsman, and times it through the same launcher.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/nsman/nsman/internal/cluster"
	"github.com/nsman/nsman/internal/prom"
)

// listed are the resources listed after the managers, metadata only, in
// the in-process floor's order: the namespaces (floorLists), then what
// IDLE counts as activity (floorActivityLists).
var listed = []schema.GroupVersionResource{
	corev1.SchemeGroupVersion.WithResource("namespaces"),
	appsv1.SchemeGroupVersion.WithResource("replicasets"),
	appsv1.SchemeGroupVersion.WithResource("controllerrevisions"),
	batchv1.SchemeGroupVersion.WithResource("jobs"),
	corev1.SchemeGroupVersion.WithResource("pods"),
}

// read is what the floor read, as it prints it.
type read struct {
	Managers int            `json:"managers"`
	Listed   map[string]int `json:"listed"`
	Series   int            `json:"series"`
	Used     int            `json:"used"`
}

func main() {
	kubeconfig := flag.String("kubeconfig", "", "the kubeconfig to read as (nsman's ServiceAccount's)")
	url := flag.String("prometheus-url", "", "the Prometheus to ask")
	query := flag.String("query", "", "the PromQL to ask, once")
	prefix := flag.String("prefix", "", "the namespaces whose requests count are named PREFIX-…")
	want := flag.Int("want", 0, "how many of them the query must answer requests for")
	pageSize := flag.Int64("page-size", 500, "the page size of each LIST")
	flag.Parse()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	r, err := floor(ctx, *kubeconfig, *url, *query, *prefix, *pageSize)
	cancel()
	if err == nil && r.Used != *want {
		err = fmt.Errorf("the query answered requests for %d namespaces %s-…, want %d", r.Used, *prefix, *want)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "trafficfloor:", err)
		os.Exit(1)
	}
	_ = json.NewEncoder(os.Stdout).Encode(r)
}

// floor makes the reads, as the ServiceAccount of kubeconfig, unthrottled
// (QPS -1) as the in-process floors.
func floor(ctx context.Context, kubeconfig, url, query, prefix string, pageSize int64) (read, error) {
	r := read{Listed: map[string]int{}}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return r, err
	}
	cfg.QPS = -1
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return r, err
	}
	meta, err := metadata.NewForConfig(cfg)
	if err != nil {
		return r, err
	}
	client, err := prom.New(prom.Config{URL: url})
	if err != nil {
		return r, err
	}
	opts := metav1.ListOptions{Limit: pageSize}
	for {
		list, err := dyn.Resource(cluster.ManagerResource).List(ctx, opts)
		if err != nil {
			return r, fmt.Errorf("list managers: %w", err)
		}
		r.Managers += len(list.Items)
		if opts.Continue = list.GetContinue(); opts.Continue == "" {
			break
		}
	}
	for _, res := range listed {
		opts := metav1.ListOptions{Limit: pageSize}
		for {
			list, err := meta.Resource(res).List(ctx, opts)
			if err != nil {
				return r, fmt.Errorf("list %s: %w", res.GroupResource(), err)
			}
			r.Listed[res.Resource] += len(list.Items)
			if opts.Continue = list.GetContinue(); opts.Continue == "" {
				break
			}
		}
	}
	vec, err := client.Query(ctx, query)
	if err != nil {
		return r, err
	}
	r.Series = len(vec)
	for _, s := range vec {
		if strings.HasPrefix(string(s.Metric["namespace"]), prefix+"-") && s.Value > 0 {
			r.Used++
		}
	}
	return r, nil
}
