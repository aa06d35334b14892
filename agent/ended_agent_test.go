package agent_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/vlmfleet/vlmfleet/agent"
	"github.com/vlmfleet/vlmfleet/agent/engine"
	"github.com/vlmfleet/vlmfleet/agent/outbox"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// An agent killed after listing a job as ended and before spooling its
// last state finds the state in the list when the job comes back: it
// sends that state and acknowledges the job, and does not measure it
// again. The spool is left as the kill left it: the list holds the job,
// the spool no message.
func TestAgentKilledBeforeSpoolingTheLastStateSendsItWhenTheJobComesBack(t *testing.T) {
	ctx := testCtx(t, 60*time.Second)
	const id = "sim1"
	lab := startFakeLab(t, ctx, id)
	spool := t.TempDir()
	last := protocol.JobStateChange{Schema: protocol.SchemaVersion, JobID: "j1", SweepID: "s1", RunID: "r1", AgentID: id,
		State: protocol.JobCompleted, Time: time.Now().UTC(), Attempt: 1}
	data, err := json.Marshal(last)
	if err != nil {
		t.Fatal(err)
	}
	o, err := outbox.Open(outbox.Options{Dir: spool})
	if err != nil {
		t.Fatal(err)
	}
	msg := &outbox.Message{Subject: protocol.AgentSubject(id, protocol.KindState), MsgID: protocol.StateMsgID("j1", protocol.JobCompleted, 1), Data: data}
	if err := o.EndJob("j1", msg); err != nil {
		t.Fatal(err)
	}
	_ = o.Close()

	startAgent(t, ctx, agent.Config{
		ID: id, NATSURL: lab.url, LogDir: t.TempDir(), SpoolDir: spool,
		Telemetry:         agent.TelemetryConfig{Source: "off"},
		HeartbeatInterval: engine.Duration(50 * time.Millisecond),
		Deployments:       []agent.DeploymentConfig{simDeployment(t, 200)},
	}, nil)
	<-lab.hellos
	lab.submit(t, ctx, protocol.Job{ID: "j1", SweepID: "s1", AgentID: id, Deployment: "d1", Workload: smallWorkload(1)})
	// The consumer delivers one job at a time: j2 runs only once j1 is
	// acknowledged.
	lab.submit(t, ctx, protocol.Job{ID: "j2", SweepID: "s1", AgentID: id, Deployment: "d1", Workload: smallWorkload(1)})
	var j1 []protocol.JobState
	for {
		select {
		case st := <-lab.states:
			if st.JobID == "j1" {
				j1 = append(j1, st.State)
				if st.RunID != "r1" || !st.Time.Equal(last.Time) {
					t.Errorf("j1's state %s: run %q at %v, want the listed one (r1 at %v)", st.State, st.RunID, st.Time, last.Time)
				}
			}
			if st.JobID != "j2" || !st.State.Terminal() {
				continue
			}
			if st.State != protocol.JobCompleted {
				t.Fatalf("j2 ended %s: %s", st.State, st.Error)
			}
			if len(j1) != 1 || j1[0] != protocol.JobCompleted {
				t.Errorf("j1's states as it came back: %v, want only the listed completed", j1)
			}
			return
		case <-ctx.Done():
			t.Fatalf("j2 never ended; j1's states: %v", j1)
		}
	}
}
