package faults

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

const (
	// capacityEnrolers is how many agents of a step enrol at once: a
	// lab's devices set up together.
	capacityEnrolers = 1000
	// metricsJobs is how many jobs the store holds when /metrics is
	// timed, unless capacityMetricsJobsEnv says.
	metricsJobs            = 10000
	capacityMetricsJobsEnv = "VLMFLEET_CAPACITY_METRICS_JOBS"
	// metricsScrapes is how many scrapes of /metrics are timed, from the
	// probe's process, metricsScrapePause apart: enough that the p99 is
	// not simply the slowest.
	metricsScrapes     = 201
	metricsScrapePause = 20 * time.Millisecond
)

// busyLists are the lists timed while the controller is busy: the fleet
// page's read of every agent, and the first pages of jobs and sweeps.
var busyLists = []string{"/api/agents?limit=1000", "/api/jobs?limit=100", "/api/sweeps?limit=100"}

// listTiming is one list's latencies while the controller was busy.
type listTiming struct {
	path          string
	p50, p99, max time.Duration
	n             int
}

// metricsAtJobs fills the store up to metricsJobs jobs (or as many as
// capacityMetricsJobsEnv says) with sweeps over
// the agents, cancelled as soon as they are made (the controller ends
// those still queued, the agents stop the rest), then times /metrics.
// It returns the jobs held, and the scrapes' p50 and p99.
func metricsAtJobs(t *testing.T, ctx context.Context, l *lab, api *capacityAPI, agents []string) (int, time.Duration, time.Duration) {
	t.Helper()
	want := metricsJobs
	if v := os.Getenv(capacityMetricsJobsEnv); v != "" {
		var err error
		if want, err = strconv.Atoi(v); err != nil || want < 1 {
			t.Fatalf("%s=%q: want a number of jobs", capacityMetricsJobsEnv, v)
		}
	}
	w := workload(4)
	w.Cameras = []int{1}
	for jobsHeld(t, ctx, api) < want {
		s := l.submit(w, agents...)
		if _, err := l.cl.CancelSweep(ctx, s.ID); err != nil {
			t.Fatal(err)
		}
		l.waitDone(s)
	}
	jobs := jobsHeld(t, ctx, api)
	st := l.startProbe(listProbeConfig{Paths: []string{"/metrics"}, Pause: metricsScrapePause, Rounds: metricsScrapes}).wait()[0]
	return jobs, st.pct(0.5), st.pct(0.99)
}

// jobsHeld is every job the controller counts in /metrics, by state.
func jobsHeld(t *testing.T, ctx context.Context, api *capacityAPI) int {
	t.Helper()
	m, err := api.metrics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	n := 0.0
	for series, v := range m {
		if strings.HasPrefix(series, "vlmfleet_jobs{") {
			n += v
		}
	}
	return int(n)
}
