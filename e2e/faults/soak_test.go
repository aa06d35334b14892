package faults

import (
	"context"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/shirou/gopsutil/v4/process"
)

// TestSoak starts a controller and $VLMFLEET_SOAK simulated agents, each a
// process with its own credentials, runs one sweep over all of them (one
// small combination each) and reports the controller's memory and CPU,
// the latency of /api/agents meanwhile, and what became of the jobs. It
// fails for any job lost, combination duplicated or run falsely failed,
// and for any job that needed a second attempt (every job must run at its
// first attempt).
func TestSoak(t *testing.T) {
	n, err := strconv.Atoi(os.Getenv(soakEnv))
	if os.Getenv(soakEnv) == "" {
		t.Skipf("soak: run ./scripts/soak N (or set %s=N)", soakEnv)
	}
	if err != nil || n < 1 {
		t.Fatalf("%s=%q: want a number of agents", soakEnv, os.Getenv(soakEnv))
	}
	ctx := testContext(t, 20*time.Minute)
	l := newLab(t, ctx, labOptions{})
	l.quietAgents = true
	agents := ids("soak", n)
	began := time.Now()
	l.addAgents(agents...)
	t.Logf("soak: %d agents started and announced in %v", n, time.Since(began).Round(time.Millisecond))

	w := workload(4)
	w.Cameras = []int{1}
	m := watchController(ctx, t, l)
	began = time.Now()
	s := l.submit(w, agents...)
	l.waitDone(s)
	took := time.Since(began)
	st := m.stop()

	o := l.outcome(s, nil)
	t.Logf("soak: %d agents, one sweep of %d jobs done in %v", n, o.jobs, took.Round(time.Millisecond))
	t.Logf("soak: controller RSS %.0f MiB at most (%.0f MiB before the sweep), CPU %.1f s in %.1f s of sweep (%.0f%% of one core)",
		st.maxRSS/(1<<20), st.startRSS/(1<<20), st.cpu.Seconds(), took.Seconds(), 100*st.cpu.Seconds()/took.Seconds())
	t.Logf("soak: GET /api/agents during the sweep: p50 %v, p99 %v, max %v (%d requests)",
		st.pct(0.50), st.pct(0.99), st.pct(1), len(st.latencies))
	t.Logf("soak: jobs lost %d, combinations duplicated %d, runs falsely failed %d, jobs that needed a second attempt %d, messages rejected %d",
		o.lost, o.duplicated, o.falselyFailed, o.secondAttempts, o.rejected)
	o.check(t)
	for _, id := range o.retried[:min(len(o.retried), 3)] {
		l.agents[id].ShowLog()
	}
}

// controllerWatch samples the controller process and times /api/agents
// while a sweep runs.
type controllerWatch struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
	proc   *process.Process
	cpu0   float64
	stats  watchStats
	probe  *listProbe
}

type watchStats struct {
	startRSS, maxRSS float64
	cpu              time.Duration
	latencies        []time.Duration
}

// pct is the p-quantile of the latencies (p = 1: the largest).
func (s watchStats) pct(p float64) time.Duration {
	if len(s.latencies) == 0 {
		return 0
	}
	l := slices.Clone(s.latencies)
	slices.Sort(l)
	i := min(len(l)-1, int(p*float64(len(l))))
	return l[i].Round(100 * time.Microsecond)
}

func watchController(ctx context.Context, t *testing.T, l *lab) *controllerWatch {
	p, err := process.NewProcessWithContext(ctx, int32(l.ctrl.Pid()))
	if err != nil {
		t.Fatal(err)
	}
	times, err := p.TimesWithContext(ctx)
	if err != nil {
		t.Fatal(err)
	}
	mem, err := p.MemoryInfoWithContext(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(ctx)
	m := &controllerWatch{cancel: cancel, proc: p, cpu0: times.User + times.System}
	m.stats.startRSS, m.stats.maxRSS = float64(mem.RSS), float64(mem.RSS)
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		tick := time.NewTicker(250 * time.Millisecond)
		defer tick.Stop()
		for {
			if mem, err := p.MemoryInfoWithContext(ctx); err == nil {
				m.stats.maxRSS = max(m.stats.maxRSS, float64(mem.RSS))
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	// One reader at a time, with a short breath: what an operator's page
	// polling the fleet sees while the sweep runs.
	m.probe = l.startListProbe([]string{"/api/agents?limit=1000"}, 100*time.Millisecond)
	return m
}

// stop ends the sampling and returns what it saw.
func (m *controllerWatch) stop() watchStats {
	m.cancel()
	m.wg.Wait()
	m.stats.latencies = m.probe.stop()[0].latencies
	if times, err := m.proc.Times(); err == nil {
		m.stats.cpu = time.Duration((times.User + times.System - m.cpu0) * float64(time.Second))
	}
	return m.stats
}
