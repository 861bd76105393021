package integration

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nsman/nsman/cmd"
	"github.com/nsman/nsman/report"
	"github.com/nsman/nsman/test/nsmantest"
)

// The sharded overlay's pods, each with its JOB_COMPLETION_INDEX and the
// overlay's args, together handle every manager exactly once: each fires
// what is due in its shard, and no manager is in two shards or none.
func TestShardsCoverEveryManagerOnce(t *testing.T) {
	e := setup(t)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cj := typedCronJob(t, cronJobObject(t, kustomize(ctx, t, filepath.Join("deploy", "overlays", "sharded"))))
	shards := int(*cj.Spec.JobTemplate.Spec.Completions)
	args := nsmanContainer(t, cj).Args
	if len(args) == 0 || args[0] != "sweep" {
		t.Fatalf("overlay args %q: want a sweep", args)
	}

	recv := nsmantest.NewReceiver(t)
	const perNamespace = 40
	caseID := ""
	managers, due := map[string]bool{}, 0
	for range 2 {
		ns := shared.Namespace(t)
		if caseID == "" {
			caseID = ns
		}
		for i := range perNamespace {
			name := fmt.Sprintf("m%02d", i)
			ttl := int64(3600)
			if i%2 == 0 {
				ttl, due = 0, due+1
			}
			createManager(t, managerObj(ns, name, caseID, []any{ttlPolicy("notify", ttl, webhookAction(recv.ServiceURL(t, shared.Admin, ns, "sink")+"/"+ns+"/"+name))}, targeting(ns)))
			managers[ns+"/"+name] = false
		}
	}

	sweepArgs := append(args[1:], "-l", caseLabel+"="+caseID)
	fired := 0
	for i := range shards {
		t.Setenv("JOB_COMPLETION_INDEX", strconv.Itoa(i))
		res := e.Sweep(t, sweepArgs...)
		wantCode(t, res, 0)
		sh := res.Report.Summary.Shard
		if sh == nil || sh.Index != i || sh.Count != shards {
			t.Fatalf("pod %d: summary shard %+v, want %d of %d", i, sh, i, shards)
		}
		if len(res.Report.Entries) == 0 {
			t.Errorf("shard %d handled no manager of %d", i, len(managers))
		}
		if sh.Skipped+res.Report.Summary.Managers != len(managers) {
			t.Errorf("shard %d: %d handled + %d skipped, want the %d listed", i, res.Report.Summary.Managers, sh.Skipped, len(managers))
		}
		for _, entry := range res.Report.Entries {
			id := entry.Namespace + "/" + entry.Name
			seen, ours := managers[id]
			switch {
			case !ours:
				t.Errorf("shard %d handled %s, not this test's", i, id)
			case seen:
				t.Errorf("%s handled by two shards", id)
			}
			managers[id] = true
			if entry.State == report.StateFired {
				fired++
			}
		}
	}
	for id, seen := range managers {
		if !seen {
			t.Errorf("%s handled by no shard", id)
		}
	}
	if fired != due || len(recv.Deliveries()) != due {
		t.Errorf("%d fired and %d webhooks delivered, want %d each", fired, len(recv.Deliveries()), due)
	}

	// A pod beyond the overlay's shards refuses to run and changes nothing.
	t.Setenv("JOB_COMPLETION_INDEX", strconv.Itoa(shards))
	before := len(e.Writes(t))
	res := e.Sweep(t, sweepArgs...)
	wantCode(t, res, cmd.ExitUsage)
	if !strings.Contains(res.Stderr, "JOB_COMPLETION_INDEX") {
		t.Errorf("stderr %q does not name JOB_COMPLETION_INDEX", res.Stderr)
	}
	if after := len(e.Writes(t)); after != before {
		t.Errorf("%d writes by a sweep that refused to run", after-before)
	}
}
