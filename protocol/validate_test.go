package protocol

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/vlmfleet/vlmfleet/internal/testutil"
)

func sampleRun() Run {
	return Run{
		Schema: SchemaVersion, ID: "r1", Source: SourceBench, Status: RunCompleted,
		Config:    Configuration{Model: "Qwen3-VL-4B-Instruct", ParamsB: 4.4, Quantization: "Q8_0", Engine: "llama.cpp", Device: "Jetson AGX Orin"},
		Workload:  DefaultWorkload(),
		CreatedAt: time.Unix(1700000000, 0).UTC(),
		Combinations: []Combination{{
			ComboKey: ComboKey{Size: "720p", Images: 1, Cameras: 1}, Width: 1280, Height: 720,
			Completed: 8, TTFT: Stats{N: 8, Mean: 1.31, P50: 1.3, P90: 1.4, P99: 1.4, Min: 1.2, Max: 1.4},
			TPS: Stats{N: 8, Mean: 28.4},
		}},
	}
}

func TestDecodeRunRoundTrip(t *testing.T) {
	data, err := json.Marshal(sampleRun())
	if err != nil {
		t.Fatal(err)
	}
	r, err := DecodeRun(data)
	if err != nil {
		t.Fatal(err)
	}
	if c, ok := r.Combination(ComboKey{Size: "720p", Images: 1, Cameras: 1}); !ok || c.TTFT.Mean != 1.31 {
		t.Fatalf("combination lost: %+v", r.Combinations)
	}
}

func TestDecodeRunErrorsSayWhere(t *testing.T) {
	good, _ := json.Marshal(sampleRun())
	cases := map[string]struct {
		doc  string
		want string
	}{
		"syntax":  {"{\n  \"schema\": 1,\n  \"id\": }", "line 3 column"},
		"type":    {`{"schema": 1, "id": 5}`, `field "id": got JSON number, want string`},
		"newer":   {strings.Replace(string(good), `"schema":1`, `"schema":99`, 1), "schema 99, this build reads schema 1..1"},
		"status":  {strings.Replace(string(good), `"status":"completed"`, `"status":"done"`, 1), `status "done"`},
		"size":    {strings.Replace(string(good), `"size":"720p"`, `"size":"4K"`, 1), `combinations[0]: image size "4K"`},
		"trailer": {string(good) + " {}", "trailing data"},
		"empty":   {"", "result document"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := DecodeRun([]byte(tc.doc))
			testutil.WantError(t, err, tc.want)
		})
	}
}

func TestDecodeResultMessageNeedsContent(t *testing.T) {
	m := ResultMessage{Schema: SchemaVersion, AgentID: "a1", Run: sampleRun()}
	m.Run.Combinations = nil
	data, _ := json.Marshal(m)
	if _, err := DecodeResultMessage(data); err == nil || !strings.Contains(err.Error(), "neither") {
		t.Fatalf("want an error for an empty result message, got %v", err)
	}
	m.Final = true
	data, _ = json.Marshal(m)
	if _, err := DecodeResultMessage(data); err != nil {
		t.Fatal(err)
	}
}

func FuzzDecodeRun(f *testing.F) {
	good, _ := json.Marshal(sampleRun())
	f.Add(good)
	f.Add([]byte(`{"schema":1}`))
	f.Add([]byte(`[]`))
	f.Add([]byte("{\"schema\":1,\"id\":\"x\",\"status\":\"completed\",\"config\":{\"model\":\"m\"},\"combinations\":[{\"size\":\"2K\",\"images\":-1}]}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := DecodeRun(data)
		if err == nil {
			if r.Validate() != nil {
				t.Fatalf("decoded a run that does not validate")
			}
			_ = r.Workload.Plan()
		}
	})
}

func FuzzDecodeMessages(f *testing.F) {
	m := ResultMessage{Schema: SchemaVersion, AgentID: "a1", Run: sampleRun(), Final: true}
	data, _ := json.Marshal(m)
	f.Add(data)
	j, _ := json.Marshal(Job{Schema: 1, ID: "j", AgentID: "a", Deployment: "d", Workload: DefaultWorkload()})
	f.Add(j)
	s, _ := json.Marshal(JobStateChange{Schema: 1, JobID: "j", AgentID: "a", State: JobRunning})
	f.Add(s)
	h, _ := json.Marshal(Heartbeat{Schema: 1, AgentID: "a", State: AgentBusy, JobID: "j"})
	f.Add(h)
	rm := ResultMessage{Schema: SchemaVersion, AgentID: "a1", Run: recordedRun()}
	rm.Combination, rm.Run.Combinations = &rm.Run.Combinations[0], nil
	data, _ = json.Marshal(rm)
	f.Add(data)
	f.Fuzz(func(t *testing.T, data []byte) {
		if m, err := DecodeResultMessage(data); err == nil && m.Combination != nil && m.Combination.Validate() != nil {
			t.Fatalf("decoded a combination that does not validate")
		}
		if h, err := DecodeHeartbeat(data); err == nil && h.Validate() != nil {
			t.Fatalf("decoded a heartbeat that does not validate")
		}
		_, _ = DecodeJob(data)
		_, _ = DecodeJobStateChange(data)
		_, _ = DecodeAgentHello(data)
	})
}

func TestDecodeCancel(t *testing.T) {
	good, _ := json.Marshal(Cancel{Schema: SchemaVersion, JobID: "sw-1-j1", Reason: "by a user"})
	c, err := DecodeCancel(good)
	if err != nil || c.JobID != "sw-1-j1" || c.Reason != "by a user" {
		t.Fatalf("DecodeCancel(%s) = %+v, %v", good, c, err)
	}
	for _, bad := range []string{
		`{"schema":1}`,
		`{"schema":1,"job_id":"../x"}`,
		`{"schema":99,"job_id":"j"}`,
		`{"schema":1,"job_id":"j"} {}`,
		`{"schema":1,"job_id":"j","reason":"` + strings.Repeat("x", 1001) + `"}`,
	} {
		if _, err := DecodeCancel([]byte(bad)); err == nil {
			t.Errorf("DecodeCancel(%.60s) accepted it", bad)
		}
	}
}

func FuzzDecodeCancel(f *testing.F) {
	good, _ := json.Marshal(Cancel{Schema: SchemaVersion, JobID: "sw-1-j1"})
	f.Add(good)
	f.Add([]byte(`{"schema":1,"job_id":""}`))
	f.Add([]byte(`{"schema":1,"job_id":"j","reason":7}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := DecodeCancel(data)
		if err == nil && c.Validate() != nil {
			t.Fatalf("decoded a cancel that does not validate")
		}
	})
}
