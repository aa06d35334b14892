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
	// metricsScrapes is how many scrapes of /metrics are timed.
	metricsScrapes = 21
)

// agentsTimer times GET /api/agents?limit=1000 back to back, from start
// until stop: the fleet page's read while the controller is busy.
type agentsTimer struct {
	cancel context.CancelFunc
	done   chan watchStats
}

func timeAgentsMeanwhile(t *testing.T, ctx context.Context, api *capacityAPI) *agentsTimer {
	ctx, cancel := context.WithCancel(ctx)
	a := &agentsTimer{cancel: cancel, done: make(chan watchStats, 1)}
	go func() {
		var st watchStats
		for ctx.Err() == nil {
			began := time.Now()
			if _, err := api.get(ctx, "/api/agents?limit=1000"); err != nil {
				if ctx.Err() == nil {
					t.Errorf("GET /api/agents during the ingest: %v", err)
				}
				break
			}
			st.latencies = append(st.latencies, time.Since(began))
		}
		a.done <- st
	}()
	return a
}

// stop ends the timing and returns p50, p99 and how many were timed.
func (a *agentsTimer) stop() (p50, p99 time.Duration, n int) {
	a.cancel()
	st := <-a.done
	if len(st.latencies) == 0 {
		return 0, 0, 0
	}
	return st.pct(0.5), st.pct(0.99), len(st.latencies)
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
	var st watchStats
	for range metricsScrapes {
		began := time.Now()
		if _, err := api.get(ctx, "/metrics"); err != nil {
			t.Fatal(err)
		}
		st.latencies = append(st.latencies, time.Since(began))
	}
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
