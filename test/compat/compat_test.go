// Package compat proves that the original operator's manifests work
// unchanged: under the original CRD, the four upstream examples play out as
// the original README describes. Both come from the project's fixture in
// test/fixtures/original.
package compat

import (
	"context"
	"os"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/nsman/nsman/policy"
	"github.com/nsman/nsman/test/cluster"
	"github.com/nsman/nsman/test/fixtures/original"
	"github.com/nsman/nsman/test/nsmantest"
)

var shared *cluster.Cluster

func TestMain(m *testing.M) {
	nsmantest.RunInOwnNamespace()
	cluster.Main(m, cluster.FullTier, &shared)
}

var env *nsmantest.Env

// setup installs the original CRD, once.
func setup(t *testing.T) *nsmantest.Env {
	t.Helper()
	if env != nil {
		return env
	}
	crd := original.Read(t, original.CRDFile)
	objs, err := nsmantest.Decode(crd)
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) != 1 || objs[0].GetKind() != "CustomResourceDefinition" {
		t.Fatalf("%s holds %d objects, want the CRD alone", original.CRDFile, len(objs))
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if env, err = nsmantest.Setup(ctx, shared, crd); err != nil {
		t.Fatal(err)
	}
	return env
}

func TestUpstreamExamplesPlayOut(t *testing.T) {
	env := setup(t)

	var all []*unstructured.Unstructured
	for _, file := range original.Examples(t) {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		docs, err := nsmantest.Decode(data)
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		all = append(all, docs...)
	}
	managers := 0
	for _, o := range all {
		if o.GetKind() == policy.Kind {
			managers++
		}
	}
	if managers != 4 {
		t.Fatalf("%d managers in the four examples, want 4", managers)
	}
	env.PlayOut(t, nsmantest.NewReceiver(t), all)
}
