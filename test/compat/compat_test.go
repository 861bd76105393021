// Package compat proves that the original operator's manifests work
// unchanged: under the original CRD, the four upstream examples in
// ../shared/reference play out as the original README describes. The
// reference material is absent from a user's clone; the tests then skip.
package compat

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/nsman/nsman/policy"
	"github.com/nsman/nsman/test/cluster"
	"github.com/nsman/nsman/test/nsmantest"
)

var (
	shared   *cluster.Cluster
	examples = filepath.Join(nsmantest.ReferenceDir(), "upstream-examples")
)

func TestMain(m *testing.M) {
	if _, err := os.Stat(examples); err != nil {
		fmt.Fprintf(os.Stderr, "no %s: the compatibility tests skip\n", examples)
		os.Exit(m.Run())
	}
	cluster.Main(m, cluster.FullTier, &shared)
}

// read decodes one upstream manifest, skipping the test when it is absent.
func read(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(examples, name))
	if os.IsNotExist(err) {
		t.Skipf("%s not present", name)
	}
	if err != nil {
		t.Fatal(err)
	}
	return data
}

var env *nsmantest.Env

// setup installs the original CRD from operator.yml, once.
func setup(t *testing.T) *nsmantest.Env {
	t.Helper()
	if env != nil {
		return env
	}
	objs, err := nsmantest.Decode(read(t, "operator.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var crd []byte
	for _, o := range objs {
		if o.GetKind() == "CustomResourceDefinition" {
			if crd, err = o.MarshalJSON(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if crd == nil {
		t.Fatal("operator.yml holds no CRD")
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
	for i := 1; i <= 4; i++ {
		docs, err := nsmantest.Decode(read(t, fmt.Sprintf("example-%02d.yml", i)))
		if err != nil {
			t.Fatal(err)
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
