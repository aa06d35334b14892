package simlab_test

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/vlmfleet/vlmfleet/harness/simlab"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// A sweep with a search runs it in the lab as bench does: the agent
// publishes the levels it chose like the ladder's, sustained, the
// controller stores them marked as found by search, and takes the
// search's live progress.
func TestLabSweepSearches(t *testing.T) {
	l := newLab(t, testContext(t, 90*time.Second), simlab.Options{})
	ctrl := l.Controller()
	l.startAgent(agx("search-agx"))

	w := protocol.DefaultWorkload()
	w.Sizes, w.Cameras, w.RequestsPerLevel = []string{"720p"}, []int{1, 2, 4}, 2
	w.MultiImageSizes, w.ImagesPerRequest = nil, nil
	w.Search = 16
	sweep, err := l.Submit(l.ctx, protocol.Sweep{Agents: []string{"search-agx"}, Workload: w})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Wait(l.ctx, sweep); err != nil {
		t.Fatal(err)
	}
	job, err := ctrl.Job(l.ctx, sweep.Jobs[0])
	if err != nil {
		t.Fatal(err)
	}
	if job.State != protocol.JobCompleted {
		t.Fatalf("job ended %s: %s", job.State, job.Error)
	}
	run := fetchRun(t, ctrl.HTTPURL(), job.RunID)
	searched := 0
	for _, c := range run.Combinations {
		if !c.Search {
			continue
		}
		searched++
		if !w.SearchLevel(c.ComboKey) || !c.Sustained() || c.Completed+c.Failed < c.Cameras*protocol.MinSustainedRounds ||
			c.Rounds < protocol.MinSustainedRounds || c.Tail == nil {
			t.Errorf("%s: searched %d+%d requests in %d rounds, tail %v; want sustained, at least %d rounds",
				c.ComboKey, c.Completed, c.Failed, c.Rounds, c.Tail, protocol.MinSustainedRounds)
		}
	}
	if searched == 0 || len(run.Combinations) != len(w.Plan())+searched {
		t.Errorf("stored %d combinations, %d of them searched; want the plan's 3 and at least one searched", len(run.Combinations), searched)
	}
	resp, err := http.Get(ctrl.HTTPURL() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	metrics, _ := io.ReadAll(resp.Body)
	if !strings.Contains(string(metrics), "vlmfleet_agent_refusals_total{kind=\"progress\"} 0\n") {
		t.Error("the controller refused progress of the search's levels")
	}
}
