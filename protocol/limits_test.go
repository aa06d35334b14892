package protocol

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/vlmfleet/vlmfleet/internal/testutil"
)

// recordedRun is sampleRun with the request records an agent sends: the
// combination's counts match its records.
func recordedRun() Run {
	r := sampleRun()
	r.StartedAt = r.CreatedAt.Add(time.Second)
	r.FinishedAt = r.StartedAt.Add(time.Minute)
	c := &r.Combinations[0]
	c.StartedAt, c.FinishedAt = r.StartedAt, r.StartedAt.Add(30*time.Second)
	c.Completed, c.Failed = 1, 1
	c.Errors = []ErrorCount{{Error: "HTTP 500: boom", Count: 1}}
	c.TTFT = Stats{N: 1, Mean: 1.3, P50: 1.3, P90: 1.3, P99: 1.3, Min: 1.3, Max: 1.3}
	c.TPS = Stats{N: 1, Mean: 28}
	c.Requests = []RequestRecord{
		{Camera: 0, Seq: 0, Start: 0.01, TTFB: 0.2, RoleChunk: 0.3, TTFT: 1.3, LastToken: 5.8, E2E: 5.9,
			CompletionTokens: 128, TokenSource: TokensFromUsage, TPS: 28, ITL: 0.035, Images: 1,
			Timings: map[string]float64{"predicted_ms": 4500}, FinishReason: "length"},
		{Camera: 0, Seq: 1, Start: 6, TTFB: 0.1, E2E: 0.1, Images: 1, Error: "HTTP 500: boom"},
	}
	return r
}

// TestValidationGaps holds documents that validation once let through; each must be refused with an error that names the field.
func TestValidationGaps(t *testing.T) {
	cases := map[string]struct {
		edit func(r *Run)
		want string
	}{
		"negative ttft":        {func(r *Run) { r.Combinations[0].Requests[0].TTFT = -0.5 }, "requests[0].ttft: -0.5, want 0 or more"},
		"negative start":       {func(r *Run) { r.Combinations[0].Requests[1].Start = -1 }, "requests[1].start: -1, want 0 or more"},
		"negative ttfb":        {func(r *Run) { r.Combinations[0].Requests[0].TTFB = -1 }, "requests[0].ttfb"},
		"negative role chunk":  {func(r *Run) { r.Combinations[0].Requests[0].RoleChunk = -1 }, "requests[0].role_chunk"},
		"negative last token":  {func(r *Run) { r.Combinations[0].Requests[0].LastToken = -1 }, "requests[0].last_token"},
		"negative e2e":         {func(r *Run) { r.Combinations[0].Requests[0].E2E = -1 }, "requests[0].e2e"},
		"negative itl":         {func(r *Run) { r.Combinations[0].Requests[0].ITL = -1 }, "requests[0].itl"},
		"negative tps":         {func(r *Run) { r.Combinations[0].Requests[0].TPS = -1 }, "requests[0].tps"},
		"infinite e2e":         {func(r *Run) { r.Combinations[0].Requests[0].E2E = math.Inf(1) }, "requests[0].e2e: +Inf"},
		"negative tokens":      {func(r *Run) { r.Combinations[0].Requests[0].CompletionTokens = -3 }, "requests[0].completion_tokens: -3"},
		"negative ttfb stats":  {func(r *Run) { r.Combinations[0].TTFB.P90 = -2 }, "ttfb.p90: -2, want 0 or more"},
		"prompt tokens stats":  {func(r *Run) { r.Combinations[0].PromptTokens.Min = -2 }, "prompt_tokens.min"},
		"stats n above counts": {func(r *Run) { r.Combinations[0].TTFT.N = 5 }, "ttft.n: 5"},
		"negative wall":        {func(r *Run) { r.Combinations[0].WallSec = -1 }, "wall_sec: -1"},
		"run finished first": {func(r *Run) { r.FinishedAt = r.StartedAt.Add(-time.Second) },
			"finished_at 2023-11-14T22:13:20Z is before started_at 2023-11-14T22:13:21Z"},
		"run started long before created": {func(r *Run) { r.StartedAt = r.CreatedAt.Add(-time.Hour) }, "started_at"},
		"combination finished first": {func(r *Run) { c := &r.Combinations[0]; c.FinishedAt = c.StartedAt.Add(-time.Second) },
			"720p-1img-1cam: finished_at"},
		"trillion completed": {func(r *Run) { r.Combinations[0].Completed = 1e12 }, "completed: 1000000000000, want 0.."},
		"counts beside records": {func(r *Run) { r.Combinations[0].Completed = 7 },
			"completed 7 + failed 1 = 8, but 2 request records"},
		"negative failed":     {func(r *Run) { r.Combinations[0].Failed = -1 }, "failed: -1"},
		"error counts":        {func(r *Run) { r.Combinations[0].Errors[0].Count = 5 }, "errors count 5 failures, more than failed 1"},
		"huge model":          {func(r *Run) { r.Config.Model = strings.Repeat("m", 7<<20) }, "config.model: 7340032 bytes, at most 256"},
		"huge engine":         {func(r *Run) { r.Config.Engine = strings.Repeat("e", 300) }, "config.engine: 300 bytes, at most 256"},
		"huge device":         {func(r *Run) { r.Device.Name = strings.Repeat("d", 300) }, "device.name: 300 bytes"},
		"huge quantization":   {func(r *Run) { r.Config.Quantization = strings.Repeat("q", 300) }, "config.quantization"},
		"huge gpu name":       {func(r *Run) { r.Device.GPUs = []GPUFacts{{Name: strings.Repeat("g", 300)}} }, "device.gpus[0].name"},
		"huge request error":  {func(r *Run) { r.Combinations[0].Requests[1].Error = strings.Repeat("x", 5000) }, "requests[1].error: 5000 bytes, at most 4096"},
		"huge combo error":    {func(r *Run) { r.Combinations[0].Errors[0].Error = strings.Repeat("x", 5000) }, "errors[0].error: 5000 bytes"},
		"huge run error":      {func(r *Run) { r.Error = strings.Repeat("x", 40<<10) }, "error: 40960 bytes, at most 32768"},
		"huge log tail":       {func(r *Run) { r.Engine.LogTail = strings.Repeat("x", 40<<10) }, "engine.log_tail"},
		"huge prop":           {func(r *Run) { r.Engine.Props = map[string]string{"k": strings.Repeat("x", 5000)} }, `engine.props["k"]`},
		"huge job id":         {func(r *Run) { r.JobID = strings.Repeat("j", 300) }, "job_id: 300 bytes"},
		"huge timeout":        {func(r *Run) { r.Workload.RequestTimeoutSec = 1e308 }, "workload.request_timeout_sec: 1e+308, want 0 (no bound) up to 86400"},
		"negative params":     {func(r *Run) { r.Config.ParamsB = -4 }, "config.params_b: -4"},
		"huge timings":        {func(r *Run) { r.Combinations[0].Requests[0].Timings = map[string]float64{"x": math.NaN()} }, `requests[0].timings["x"]: NaN`},
		"bad max in flight":   {func(r *Run) { r.Combinations[0].MaxInFlight = 2 }, "max_in_flight: 2, want 0..1"},
		"too many records":    {func(r *Run) { r.Combinations[0].Requests = make([]RequestRecord, MaxRequestsInCombination+1) }, "requests: 100001 records"},
		"huge workload image": {func(r *Run) { r.Workload.ImageSet = strings.Repeat("i", 5000) }, "workload.image_set"},
		"idle power source":   {func(r *Run) { r.IdlePower = &IdlePower{Source: "wall", MeanPowerW: 5} }, `idle_power.source: "wall"`},
		"negative idle power": {func(r *Run) { r.IdlePower = &IdlePower{Source: PowerSourceGPU, MeanPowerW: -5} }, "idle_power.mean_power_w: -5"},
		"infinite idle window": {func(r *Run) { r.IdlePower = &IdlePower{Source: PowerSourceGPU, WindowSec: math.Inf(1)} },
			"idle_power.window_sec: +Inf"},
		"long idle series": {func(r *Run) {
			r.IdlePower = &IdlePower{Source: PowerSourceGPU, Series: make([]TelemetrySample, MaxIdleSamples+1)}
		}, "idle_power.series: 1025 samples, at most 1024"},
	}
	good := recordedRun()
	if err := good.Validate(); err != nil {
		t.Fatalf("the sample does not validate: %v", err)
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r := recordedRun()
			tc.edit(&r)
			testutil.WantError(t, r.Validate(), tc.want)
			// The decoders refuse it too, with the same words.
			data, err := json.Marshal(r)
			if err != nil || len(data) > MaxMessageBytes {
				return // not expressible in JSON, or refused for its size first
			}
			_, err = DecodeRun(data)
			testutil.WantError(t, err, tc.want)
		})
	}
}

func TestValidationLimitsKeepWhatAgentsSend(t *testing.T) {
	r := recordedRun()
	// A run without records (an imported summary) keeps whatever counts it has.
	r.Combinations[0].Requests = nil
	r.Combinations[0].Completed = 100
	r.Combinations[0].TTFT.N = 100
	// The engine's failure text carries an 8 KiB log tail; the log tail itself 10 KiB.
	r.Error = "measuring: vllm: engine exited; log tail:\n" + strings.Repeat("x", 8<<10)
	r.Engine.LogTail = strings.Repeat("y", 10<<10)
	// Times equal are fine (a closed previous attempt), and a zero time is unset.
	r.FinishedAt = r.StartedAt
	r.Combinations[0].StartedAt, r.Combinations[0].FinishedAt = time.Time{}, time.Time{}
	// A little clock skew between created_at and started_at is tolerated.
	r.StartedAt = r.CreatedAt.Add(-time.Minute)
	r.FinishedAt = r.StartedAt
	r.Workload.RequestTimeoutSec = MaxRequestTimeoutSec
	if err := r.Validate(); err != nil {
		t.Fatal(err)
	}
	m := ResultMessage{Schema: SchemaVersion, AgentID: "a1", Run: recordedRun()}
	m.Combination = &m.Run.Combinations[0]
	m.Run.Combinations = nil
	data, _ := json.Marshal(m)
	if _, err := DecodeResultMessage(data); err != nil {
		t.Fatal(err)
	}
	m.Combination.Requests[0].TTFT = -0.5
	data, _ = json.Marshal(m)
	_, err := DecodeResultMessage(data)
	testutil.WantError(t, err, "result message: 720p-1img-1cam: requests[0].ttft: -0.5, want 0 or more")
	m = ResultMessage{Schema: SchemaVersion, AgentID: "a1", Run: recordedRun(), Final: true}
	m.Run.Config.Model = strings.Repeat("m", 7<<20)
	data, _ = json.Marshal(m)
	_, err = DecodeResultMessage(data)
	testutil.WantError(t, err, "run: config.model: 7340032 bytes, at most 256")
}

func TestWorkloadTimeoutBounded(t *testing.T) {
	for _, v := range []float64{1e308, MaxRequestTimeoutSec + 1, -1, math.NaN(), math.Inf(1)} {
		w := DefaultWorkload()
		w.RequestTimeoutSec = v
		testutil.WantError(t, w.Validate(), "workload.request_timeout_sec")
	}
	j := Job{Schema: SchemaVersion, ID: "j", AgentID: "a", Deployment: "d", Workload: DefaultWorkload()}
	j.Workload.RequestTimeoutSec = 1e308
	data, _ := json.Marshal(j)
	_, err := DecodeJob(data)
	testutil.WantError(t, err, "request_timeout_sec: 1e+308")
}

func TestHeartbeatState(t *testing.T) {
	for _, s := range []string{AgentIdle, AgentBusy, ""} {
		h := Heartbeat{Schema: SchemaVersion, AgentID: "a1", State: s, Seq: 1}
		if err := h.Validate(); err != nil {
			t.Errorf("state %q: %v", s, err)
		}
	}
	for _, bad := range []Heartbeat{
		{Schema: SchemaVersion, AgentID: "a1", State: "on fire"},
		{Schema: SchemaVersion, AgentID: "a1", State: strings.Repeat("x", 1<<20)},
		{Schema: SchemaVersion, AgentID: "a1", State: AgentBusy, JobID: "../x"},
		{Schema: SchemaVersion, AgentID: "a 1", State: AgentIdle},
	} {
		if err := bad.Validate(); err == nil {
			t.Errorf("heartbeat %.60v accepted", bad)
		}
	}
	h := Heartbeat{Schema: SchemaVersion, AgentID: "a1", State: "on fire"}
	data, _ := json.Marshal(h)
	_, err := DecodeHeartbeat(data)
	testutil.WantError(t, err, `heartbeat: state "on fire": want idle or busy`)
}

func TestHelloAndStateLimits(t *testing.T) {
	h := AgentHello{Schema: SchemaVersion, AgentID: "a1", Hostname: strings.Repeat("h", 300),
		Deployments: []Deployment{{ID: "d1", Engine: EngineSim, Model: "m"}}}
	data, _ := json.Marshal(h)
	_, err := DecodeAgentHello(data)
	testutil.WantError(t, err, "hostname: 300 bytes, at most 256")
	h.Hostname = "h"
	h.Deployments[0].Model = strings.Repeat("m", 7<<20)
	data, _ = json.Marshal(h)
	_, err = DecodeAgentHello(data)
	testutil.WantError(t, err, "deployments[0].model: 7340032 bytes")

	s := JobStateChange{Schema: SchemaVersion, JobID: "j", AgentID: "a1", State: JobFailed, Error: strings.Repeat("x", 40<<10)}
	data, _ = json.Marshal(s)
	_, err = DecodeJobStateChange(data)
	testutil.WantError(t, err, "error: 40960 bytes, at most 32768")
}

// A hello's broken deployments are bounded and each says why.
func TestHelloBrokenDeploymentLimits(t *testing.T) {
	h := AgentHello{Schema: SchemaVersion, AgentID: "a1",
		BrokenDeployments: []BrokenDeployment{{ID: "", Engine: "llamacpp", Reason: "deployments[0].id: empty"}}}
	data, _ := json.Marshal(h)
	if _, err := DecodeAgentHello(data); err != nil {
		t.Fatalf("a hello with no valid deployment and one broken one (without an id) refused: %v", err)
	}
	for _, tc := range []struct {
		mutate func(*BrokenDeployment)
		want   string
	}{
		{func(d *BrokenDeployment) { d.Reason = " " }, "broken_deployments[0].reason is empty"},
		{func(d *BrokenDeployment) { d.Reason = strings.Repeat("r", 5<<10) }, "broken_deployments[0].reason: 5120 bytes, at most 4096"},
		{func(d *BrokenDeployment) { d.ID = strings.Repeat("i", 300) }, "broken_deployments[0].id: 300 bytes, at most 256"},
	} {
		b := h
		b.BrokenDeployments = []BrokenDeployment{h.BrokenDeployments[0]}
		tc.mutate(&b.BrokenDeployments[0])
		data, _ := json.Marshal(b)
		_, err := DecodeAgentHello(data)
		testutil.WantError(t, err, tc.want)
	}
}
