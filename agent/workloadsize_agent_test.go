package agent_test

import (
	"runtime"
	"testing"
	"time"

	"github.com/vlmfleet/vlmfleet/agent"
	"github.com/vlmfleet/vlmfleet/agent/engine"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// A job whose workload is past protocol's limits (one size, cameras
// 1..1024, 2,000 frame intervals: two million combinations) is rejected,
// saying which field and limit, before anything of it is planned; the
// agent goes on with its next job.
func TestAgentRejectsAJobPastTheWorkloadLimits(t *testing.T) {
	ctx := testCtx(t, 60*time.Second)
	const id = "sim1"
	lab := startFakeLab(t, ctx, id)
	startAgent(t, ctx, agent.Config{
		ID: id, NATSURL: lab.url, LogDir: t.TempDir(), SpoolDir: t.TempDir(),
		Telemetry:         agent.TelemetryConfig{Source: "off"},
		HeartbeatInterval: engine.Duration(50 * time.Millisecond),
		Deployments:       []agent.DeploymentConfig{simDeployment(t, 200)},
	}, nil)
	<-lab.hellos

	huge := smallWorkload(1)
	huge.Cameras = make([]int, protocol.MaxCameraLevel)
	for i := range huge.Cameras {
		huge.Cameras[i] = i + 1
	}
	huge.FrameIntervalSec = make([]float64, 2000)
	for i := range huge.FrameIntervalSec {
		huge.FrameIntervalSec[i] = float64(i + 1)
	}
	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	lab.submit(t, ctx, protocol.Job{ID: "j1", SweepID: "s1", AgentID: id, Deployment: "d1", Workload: huge})
	st := lab.ended(t, ctx, "j1")
	if st.State != protocol.JobRejected || st.Error != "workload.frame_interval_sec: 2000 intervals, at most 16" {
		t.Errorf("j1 ended %s: %q; want rejected naming the field and its limit", st.State, st.Error)
	}
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	if b := after.TotalAlloc - before.TotalAlloc; b > 64<<20 {
		t.Errorf("rejecting it allocated %d MB", b>>20)
	}

	lab.submit(t, ctx, protocol.Job{ID: "j2", SweepID: "s1", AgentID: id, Deployment: "d1", Workload: smallWorkload(1)})
	if st := lab.ended(t, ctx, "j2"); st.State != protocol.JobCompleted {
		t.Fatalf("the next job ended %s: %s", st.State, st.Error)
	}
}
