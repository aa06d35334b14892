package controller

import (
	"context"
	"fmt"
	"github.com/vlmfleet/vlmfleet/controller/api"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"

	"github.com/vlmfleet/vlmfleet/controller/store"
	"github.com/vlmfleet/vlmfleet/harness/ingestload"
	"github.com/vlmfleet/vlmfleet/internal/testutil"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// TestMeasureIngest measures the controller's ingest in this process: result
// messages of the size agents on real devices publish (ingestload), for the
// runs of 100 agents (the results of a fleet arrive spread over many runs),
// stored through the embedded NATS server and bbolt as in production. Two
// ways, for each shape:
//
//   - live: the messages are published as fast as JetStream acknowledges
//     them while the controller stores them, timed from the first publish
//     to the last stored: publisher, server and controller on the same
//     cores;
//   - backlog: the messages wait in the events stream while the
//     controller is stopped (published into its JetStream store by a NATS
//     server of their own), and the controller started again is timed
//     from its start until it has stored them all: what the controller
//     alone sustains, as after an outage.
//
// It prints combinations per second, MB/s and the CPU the process used
// per message. Run it with
//
//	VLMFLEET_MEASURE=1 go test -count=1 -v -run TestMeasureIngest ./controller/
//
// VLMFLEET_MEASURE_INGEST=N sets the messages of each measurement (20,000)
// VLMFLEET_MEASURE_SHAPES=1 measures only the first shape and
// VLMFLEET_MEASURE_MODES=live or backlog only that way;
// VLMFLEET_MEASURE_PROFILES=DIR saves a CPU profile of each measurement.
func TestMeasureIngest(t *testing.T) {
	if os.Getenv("VLMFLEET_MEASURE") == "" {
		t.Skip("a measurement for docs/benchmarks.md; set VLMFLEET_MEASURE=1 to run it")
	}
	n := 20000
	if v := os.Getenv("VLMFLEET_MEASURE_INGEST"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 1 {
			t.Fatalf("VLMFLEET_MEASURE_INGEST=%q: want a number of messages", v)
		}
	}
	shapes := []struct {
		name  string
		shape ingestload.Shape
	}{
		{"default workload, 8 cameras (8 records, 6 s)", ingestload.Shape{}},
		{"8 cameras for 30 s (80 records)", ingestload.Shape{Records: 80, Seconds: 30}},
	}
	if os.Getenv("VLMFLEET_MEASURE_SHAPES") == "1" {
		shapes = shapes[:1]
	}
	dir := t.TempDir()
	m := &ingestMeter{t: t, dir: dir}
	m.start()
	runs := reportedRuns(t, m.c, 100)
	pass := 0
	for _, sh := range shapes {
		for _, backlog := range []bool{false, true} {
			if v := os.Getenv("VLMFLEET_MEASURE_MODES"); v != "" && (v == "backlog") != backlog {
				continue
			}
			msgs, err := ingestload.Build(runs, n, pass, sh.shape)
			if err != nil {
				t.Fatal(err)
			}
			pass++
			bytes, wire := 0, 0
			for _, msg := range msgs {
				bytes += len(msg.JSON)
				wire += len(msg.Data)
			}
			mode := "live"
			if backlog {
				mode = "backlog"
			}
			stop := cpuProfile(t, fmt.Sprintf("ingest-%s-%d.pprof", mode, pass))
			var r ingestRun
			if backlog {
				r = m.backlog(msgs)
			} else {
				r = m.live(msgs)
			}
			stop()
			if backlog {
				t.Logf("ingest backlog: the first result stored %v after the controller's start", r.firstAfter.Round(time.Millisecond))
			}
			secs := r.took.Seconds()
			t.Logf("ingest %-7s %s: %d messages of %.1f KB (%.1f KB compressed): published in %v, stored in %v: %.0f combinations/s, %.1f MB/s of JSON, %.0f µs of CPU a message",
				mode, sh.name, n, float64(bytes)/float64(n)/1000, float64(wire)/float64(n)/1000, r.publish.Round(time.Millisecond), r.took.Round(time.Millisecond),
				float64(n)/secs, float64(bytes)/1e6/secs, float64(r.cpu.Microseconds())/float64(n))
		}
	}
	m.c.Close()
}

type ingestRun struct {
	publish, took, cpu time.Duration
	// firstAfter is, for a backlog, when the first result was stored
	// after the controller's start.
	firstAfter time.Duration
}

// ingestMeter runs the controller of TestMeasureIngest, counting the
// results it stores.
type ingestMeter struct {
	t      *testing.T
	dir    string
	c      *Controller
	stored atomic.Int64
	// first is when the first result was stored after start (UnixNano).
	first atomic.Int64
}

// start starts the controller on the meter's data dir, counting from
// now, and returns when it has started.
func (m *ingestMeter) start() {
	t := m.t
	c, err := New(Options{DataDir: m.dir, NATSListen: "127.0.0.1:-1", HTTPAddr: "127.0.0.1:0",
		Log: zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)})
	if err != nil {
		t.Fatal(err)
	}
	// The events the fanout drops (it never blocks) would never be
	// counted, so results are counted as they are stored, on the
	// fanout's goroutine: its queue holds thousands.
	c.OnEvent(func(ev api.Event) {
		if ev.Kind == api.EventResult {
			m.stored.Add(1)
			m.first.CompareAndSwap(0, time.Now().UnixNano())
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	apiTokens.Store(c.HTTPURL()[len("http://"):], c.APIToken())
	m.c = c
}

// wait waits until want results have been stored since the meter began.
func (m *ingestMeter) wait(ctx context.Context, want int64) {
	for m.stored.Load() < want {
		select {
		case <-ctx.Done():
			m.t.Fatalf("%d of %d results stored", m.stored.Load(), want)
		case <-time.After(time.Millisecond):
		}
	}
	if d := m.c.events.Dropped(); d > 0 {
		m.t.Fatalf("the fanout dropped %d events: the count is wrong", d)
	}
}

// live publishes msgs to the running controller and times it storing them.
func (m *ingestMeter) live(msgs []ingestload.Message) ingestRun {
	t := m.t
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	_, js := adminConn(t, m.c)
	want := m.stored.Load() + int64(len(msgs))
	began, cpu0 := time.Now(), testutil.ProcessCPU(t)
	if _, err := ingestload.Publish(ctx, js, msgs); err != nil {
		t.Fatal(err)
	}
	r := ingestRun{publish: time.Since(began)}
	m.wait(ctx, want)
	r.took, r.cpu = time.Since(began), testutil.ProcessCPU(t)-cpu0
	return r
}

// backlog stops the controller, publishes msgs into its stream with a
// NATS server of its own on the controller's JetStream store, and times
// the controller started again until it has stored them.
func (m *ingestMeter) backlog(msgs []ingestload.Message) ingestRun {
	t := m.t
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	if err := m.c.Close(); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	ns, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: server.RANDOM_PORT, NoSigs: true, JetStream: true,
		StoreDir: filepath.Join(m.dir, "nats"), ServerName: "vlmfleet-controller", MaxPayload: protocol.MaxMessageBytes})
	if err != nil {
		t.Fatal(err)
	}
	ns.Start()
	if !ns.ReadyForConnections(30 * time.Second) {
		t.Fatal("nats server did not start")
	}
	_, js := testutil.ConnectJS(t, ns.ClientURL(), nats.Timeout(30*time.Second))
	if _, err := ingestload.Publish(ctx, js, msgs); err != nil {
		t.Fatal(err)
	}
	r := ingestRun{publish: time.Since(began)}
	ns.Shutdown()
	ns.WaitForShutdown()

	want := m.stored.Load() + int64(len(msgs))
	m.first.Store(0)
	began, cpu0 := time.Now(), testutil.ProcessCPU(t)
	m.start()
	m.wait(ctx, want)
	r.took, r.cpu = time.Since(began), testutil.ProcessCPU(t)-cpu0
	r.firstAfter = time.Duration(m.first.Load() - began.UnixNano())
	return r
}

// reportedRuns has n agents announce themselves and report attempt 1 of
// their job of one sweep, and returns their runs' headers.
func reportedRuns(t *testing.T, c *Controller, n int) []protocol.Run {
	t.Helper()
	var ids []string
	agents := map[string]*fakeAgent{}
	for i := range n {
		id := fmt.Sprintf("agx-%02d", i)
		_, a := announced(t, c, id, "d1")
		ids = append(ids, id)
		agents[id] = a
	}
	ev := watchEvents(t, c)
	sw := submit(t, c, protocol.Sweep{Agents: ids, Workload: testWorkload()})
	var runs []protocol.Run
	for _, jobID := range sw.Jobs {
		j, err := c.Job(waitCtx(t), jobID)
		if err != nil {
			t.Fatal(err)
		}
		agents[j.AgentID].state(t, jobID, protocol.JobRunning, 1, true)
		runs = append(runs, ingestload.Header(store.RunIDFor(jobID, 1), jobID, sw.ID, j.AgentID, time.Now().UTC()))
	}
	ev.waitFor(t, n, kindIs(api.EventState))
	return runs
}

// cpuProfile profiles the CPU into file under $VLMFLEET_MEASURE_PROFILES,
// if set, until the function it returns is called.
func cpuProfile(t *testing.T, file string) (stop func()) {
	dir := os.Getenv("VLMFLEET_MEASURE_PROFILES")
	if dir == "" {
		return func() {}
	}
	f, err := os.Create(filepath.Join(dir, file))
	if err != nil {
		t.Fatal(err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		t.Fatal(err)
	}
	return func() {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			t.Error(err)
		}
	}
}
