package controller

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vlmfleet/vlmfleet/controller/api"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// Power blocks as agents announce them.
var (
	orinPower = &protocol.PowerControl{
		Modes: []protocol.PowerMode{{ID: 0, Name: "MAXN"}, {ID: 1, Name: "10W"}, {ID: 2, Name: "15W"}},
		Mode:  "15W", Switchable: true,
	}
	gpuPower = &protocol.PowerControl{LimitW: 450, MinLimitW: 150, MaxLimitW: 600, Switchable: true}
)

// helloPower announces a simulated Orin NX with its power block and waits
// until it is stored.
func helloPower(t *testing.T, c *Controller, id string, pc *protocol.PowerControl, deployments ...string) *fakeAgent {
	t.Helper()
	return helloWith(t, c, id, func(h *protocol.AgentHello) { h.Device.Name, h.Power = "Jetson Orin NX", pc }, deployments...)
}

// publishedJobs reads the jobs of view that the jobs stream holds for
// agent id, in the stream's order (the order the agent takes them).
func publishedJobs(t *testing.T, c *Controller, view api.SweepView, id string) []string {
	t.Helper()
	_, js := adminConn(t, c)
	stream, err := js.Stream(waitCtx(t), protocol.StreamJobs)
	if err != nil {
		t.Fatal(err)
	}
	var seqs []uint64
	for _, j := range view.JobList {
		if j.AgentID == id {
			if !j.Published {
				t.Fatalf("job %s is not published", j.ID)
			}
			seqs = append(seqs, j.StreamSeq)
		}
	}
	slices.Sort(seqs)
	var out []string
	for _, seq := range seqs {
		m, err := stream.GetMsg(waitCtx(t), seq)
		if err != nil {
			t.Fatal(err)
		}
		var j protocol.Job
		if err := json.Unmarshal(m.Data, &j); err != nil {
			t.Fatal(err)
		}
		out = append(out, jobLine(j.AgentID, j.Deployment, j.Power))
	}
	return out
}

// jobLine is a job as these tests compare it: agent deployment power.
func jobLine(agent, deployment string, p protocol.PowerSetting) string {
	return fmt.Sprintf("%s %s %s", agent, deployment, p)
}

// A sweep's power axis makes one job per agent, deployment and setting
// that applies to the agent: modes on the Jetson, limits on the GPU host,
// each deployment in the sweep's order of settings; the jobs are stored
// and published with their setting.
func TestSweepPowerAxisMakesAJobPerSetting(t *testing.T) {
	c := startFleetController(t)
	helloPower(t, c, "orin-1", orinPower, "d1", "d2")
	helloPower(t, c, "gpu-1", gpuPower, "d1")
	sw := submit(t, c, protocol.Sweep{Agents: []string{"orin-1", "gpu-1"}, Workload: testWorkload(),
		PowerModes: []string{"15W", "MAXN"}, PowerLimitsW: []float64{300, 450}})

	var view api.SweepView
	if code := getJSON(t, c.HTTPURL()+"/api/sweeps/"+sw.ID, &view); code != http.StatusOK {
		t.Fatalf("GET the sweep: %d", code)
	}
	var stored []string
	for _, j := range view.JobList {
		stored = append(stored, jobLine(j.AgentID, j.Deployment, j.Power))
	}
	slices.Sort(stored)
	want := []string{
		"gpu-1 d1 300 W limit", "gpu-1 d1 450 W limit",
		"orin-1 d1 15W", "orin-1 d1 MAXN", "orin-1 d2 15W", "orin-1 d2 MAXN",
	}
	if !slices.Equal(stored, want) {
		t.Errorf("stored jobs:\n%s\nwant:\n%s", strings.Join(stored, "\n"), strings.Join(want, "\n"))
	}
	// The agent takes its jobs in the order published: one deployment's
	// settings back to back, in the sweep's order.
	orin := publishedJobs(t, c, view, "orin-1")
	if want := []string{"orin-1 d1 15W", "orin-1 d1 MAXN", "orin-1 d2 15W", "orin-1 d2 MAXN"}; !slices.Equal(orin, want) {
		t.Errorf("orin-1's published jobs %q, want %q", orin, want)
	}
	gpu := publishedJobs(t, c, view, "gpu-1")
	if want := []string{"gpu-1 d1 300 W limit", "gpu-1 d1 450 W limit"}; !slices.Equal(gpu, want) {
		t.Errorf("gpu-1's published jobs %q, want %q", gpu, want)
	}

	// Without a power axis an agent with power control is measured once,
	// as found.
	plain := submit(t, c, protocol.Sweep{Agents: []string{"orin-1"}, Deployments: []string{"d1"}, Workload: testWorkload()})
	if len(plain.Jobs) != 1 {
		t.Errorf("a sweep without a power axis made %d jobs, want 1", len(plain.Jobs))
	}
}

// A power setting an agent cannot take refuses the whole sweep before any
// job is stored or published, naming the field, the agent and why in the
// words of the agent's power control.
func TestSweepPowerRefusals(t *testing.T) {
	c := startFleetController(t)
	helloPower(t, c, "orin-1", orinPower, "d1")
	fixed := *orinPower
	fixed.Switchable, fixed.Reason = false, "power.switch is off in its configuration"
	helloPower(t, c, "orin-fixed", &fixed, "d1")
	helloPower(t, c, "gpu-1", gpuPower, "d1")
	helloPower(t, c, "old-1", nil, "d1")
	for _, tc := range []struct {
		name   string
		agents []string
		modes  []string
		limits []float64
		want   string
	}{
		{"a mode the device does not list", []string{"orin-1"}, []string{"15W", "25W"}, nil,
			`power_modes[1]: agent "orin-1" has no power mode "25W"; its modes: MAXN, 10W, 15W`},
		{"a limit outside the GPU's range", []string{"gpu-1"}, nil, []float64{300, 700},
			`power_limits_w[1]: agent "gpu-1" cannot take it: power limit 700 W is outside its GPU's range 150-600 W`},
		{"an agent that may not switch", []string{"orin-1", "orin-fixed"}, []string{"MAXN"}, nil,
			`power_modes[0]: agent "orin-fixed" may not switch power: power.switch is off in its configuration`},
		{"modes only, for GPU hosts only", []string{"gpu-1"}, []string{"MAXN"}, nil,
			`power_modes[0]: agent "gpu-1" has no nvpmodel modes (a GPU host takes power_limits_w)`},
		{"limits only, for Jetsons only", []string{"orin-1", "orin-fixed"}, nil, []float64{300},
			`power_limits_w[0]: agent "orin-1" has no GPU power limit to set (a Jetson takes power_modes); no other agent of the sweep has it either`},
		{"an agent that reports no power control", []string{"old-1"}, []string{"MAXN"}, []float64{300},
			`power_modes[0]: agent "old-1" reports no power control (no nvpmodel modes, no GPU power limit)`},
		{"a mode the device lacks, among limits that apply elsewhere", []string{"gpu-1", "orin-1"}, []string{"MAXN", "7W"}, []float64{300},
			`power_modes[1]: agent "orin-1" has no power mode "7W"; its modes: MAXN, 10W, 15W`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := c.SubmitSweep(waitCtx(t), protocol.Sweep{Agents: tc.agents, Workload: testWorkload(), PowerModes: tc.modes, PowerLimitsW: tc.limits})
			var bad *api.BadSweepError
			if err == nil || !errors.As(err, &bad) || !strings.HasPrefix(err.Error(), tc.want) {
				t.Fatalf("error %v (%T),\nwant a BadSweepError %q", err, err, tc.want)
			}
		})
	}
	// Over the API a sweep file's refusal names its field.
	code, body := postJSON(t, c.HTTPURL()+"/api/sweeps", `{"yaml": "agents: [orin-1]\npower_modes: [MAXN, 25W]\n"}`)
	if code != http.StatusBadRequest || !strings.Contains(body, `"field": "power_modes[1]"`) ||
		!strings.Contains(body, `has no power mode \"25W\"; its modes: MAXN, 10W, 15W`) {
		t.Errorf("POST a sweep file with a mode orin-1 lacks: %d %s", code, body)
	}
	sweeps, err := c.store.Sweeps(waitCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	_, js := adminConn(t, c)
	stream, err := js.Stream(waitCtx(t), protocol.StreamJobs)
	if err != nil {
		t.Fatal(err)
	}
	if len(sweeps) != 0 || stream.CachedInfo().State.Msgs != 0 {
		t.Errorf("refused sweeps left %d sweeps stored and %d jobs published, want none", len(sweeps), stream.CachedInfo().State.Msgs)
	}
}

// In a mixed fleet each setting applies to the agents that have it: the
// Jetsons are measured in the sweep's modes they list, the GPU host,
// which has no modes, once at its current limit, and the sweep's notes
// say so of each agent measured otherwise than the axis names.
func TestSweepPowerAxisOnAMixedFleet(t *testing.T) {
	c := startFleetController(t)
	helloPower(t, c, "orin-1", orinPower, "d1")
	agx := &protocol.PowerControl{Modes: []protocol.PowerMode{{ID: 0, Name: "MAXN"}, {ID: 1, Name: "30W"}}, Mode: "30W", Switchable: true}
	helloPower(t, c, "agx-1", agx, "d1")
	helloPower(t, c, "gpu-1", gpuPower, "d1")
	helloPower(t, c, "old-1", nil, "d1")
	sw := submit(t, c, protocol.Sweep{Agents: []string{"orin-1", "agx-1", "gpu-1", "old-1"}, Workload: testWorkload(),
		PowerModes: []string{"15W", "MAXN"}})
	var view api.SweepView
	if code := getJSON(t, c.HTTPURL()+"/api/sweeps/"+sw.ID, &view); code != http.StatusOK {
		t.Fatalf("GET the sweep: %d", code)
	}
	var stored []string
	for _, j := range view.JobList {
		stored = append(stored, jobLine(j.AgentID, j.Deployment, j.Power))
	}
	slices.Sort(stored)
	want := []string{"agx-1 d1 MAXN", "gpu-1 d1 ", "old-1 d1 ", "orin-1 d1 15W", "orin-1 d1 MAXN"}
	if !slices.Equal(stored, want) {
		t.Errorf("stored jobs:\n%s\nwant:\n%s", strings.Join(stored, "\n"), strings.Join(want, "\n"))
	}
	notes := map[string]string{}
	for _, n := range view.Notes {
		notes[n.AgentID] = n.Note
	}
	for id, note := range map[string]string{
		"agx-1": `not measured in 15W, which its device does not have`,
		"gpu-1": `measured at its current power setting (450 W limit), none of the sweep's applying: it has no nvpmodel modes (a GPU host takes power_limits_w)`,
		"old-1": `measured at its current power setting (as found), none of the sweep's applying: it reports no power control`,
	} {
		if !strings.HasPrefix(notes[id], note) {
			t.Errorf("note on %s: %q, want %q", id, notes[id], note)
		}
	}
	if len(notes) != 3 || sw.Notes == nil {
		t.Errorf("notes %v (in the answer to the submission: %v), want one on each of agx-1, gpu-1 and old-1", notes, sw.Notes)
	}
}

// An agent's view shows its power block from the hello and what it runs
// in now: the hello's until a heartbeat says, then the heartbeat's; a
// heartbeat that says nothing of power leaves it.
func TestAgentViewPower(t *testing.T) {
	c := startFleetController(t)
	ev := watchEvents(t, c)
	orin := helloPower(t, c, "orin-1", orinPower, "d1")
	helloPower(t, c, "gpu-1", gpuPower, "d1")
	if v := agentByID(t, c, "orin-1"); v.Power == nil || !slices.Equal(v.Power.ModeNames(), []string{"MAXN", "10W", "15W"}) || !v.Power.Switchable || v.PowerMode != "15W" {
		t.Errorf("orin-1 before a heartbeat: power %+v mode %q, want its hello's modes and 15W", v.Power, v.PowerMode)
	}
	if v := agentByID(t, c, "gpu-1"); v.Power == nil || v.Power.MaxLimitW != 600 || v.PowerLimitW != 450 || v.PowerMode != "" {
		t.Errorf("gpu-1: power %+v limit %g mode %q, want its hello's range and 450 W", v.Power, v.PowerLimitW, v.PowerMode)
	}
	heartbeat := func(seq int, mode string) {
		t.Helper()
		hb, _ := json.Marshal(protocol.Heartbeat{Schema: 1, AgentID: "orin-1", Time: time.Now(), State: protocol.AgentIdle, Seq: uint64(seq), PowerMode: mode})
		if err := orin.nc.Publish(protocol.AgentSubject("orin-1", protocol.KindHeartbeat), hb); err != nil {
			t.Fatal(err)
		}
		ev.waitFor(t, seq, func(e api.Event) bool { return e.Kind == api.EventHeartbeat && e.AgentID == "orin-1" })
	}
	heartbeat(1, "MAXN")
	if v := agentByID(t, c, "orin-1"); v.PowerMode != "MAXN" {
		t.Errorf("orin-1 after a heartbeat in MAXN: mode %q", v.PowerMode)
	}
	heartbeat(2, "")
	if v := agentByID(t, c, "orin-1"); v.PowerMode != "MAXN" {
		t.Errorf("orin-1 after a heartbeat that says nothing of power: mode %q, want MAXN still", v.PowerMode)
	}
}
