// Package ingestload builds result messages the size and shape that agents
// on real devices publish, for the benchmarks of the controller's ingest:
// the run header of a real run, and a combination whose request records and
// telemetry series are as many as the measurement makes (a record per
// request, a tegrastats sample every 500 ms of the combination's measured
// time), with figures that vary as measured ones do. Only tests import it.
package ingestload

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/vlmfleet/vlmfleet/agent/devicefacts/fakehw"
	"github.com/vlmfleet/vlmfleet/agent/telemetry"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// SampleEvery is the agent's default telemetry interval (agent/config.go).
const SampleEvery = 500 * time.Millisecond

// Shape is what one combination of the load measured.
type Shape struct {
	// Cameras is the combination's level (8 unless set).
	Cameras int
	// Records is how many request records it carries (the default
	// workload's 8 unless set).
	Records int
	// Seconds is its measured wall time, which sets the telemetry
	// samples (one per SampleEvery); 6 s unless set: eight cameras
	// sending one 720p request each to a 4B model on an AGX Orin.
	Seconds float64
}

func (s Shape) withDefaults() Shape {
	if s.Cameras == 0 {
		s.Cameras = 8
	}
	if s.Records == 0 {
		s.Records = protocol.DefaultWorkload().RequestsPerLevel
	}
	if s.Seconds == 0 {
		s.Seconds = 6
	}
	return s
}

// Samples is how many telemetry samples the combination carries.
func (s Shape) Samples() int {
	s = s.withDefaults()
	return max(1, int(s.Seconds/SampleEvery.Seconds()))
}

// Message is one result message, ready to publish.
type Message struct {
	Subject string
	// ID is the message id the agent would give it.
	ID string
	// Data is the message as an agent sends it to a controller that takes
	// compressed results (protocol.CompressPayload), JSON its JSON.
	Data, JSON []byte
}

// Build makes n result messages spread over the runs (each a run header:
// a real run of a job its agent has reported), each a combination its run
// has not got: pass p of Build uses other combinations than pass p-1 did,
// so that every message stores new records and no message id repeats.
func Build(runs []protocol.Run, n, pass int, shape Shape) ([]Message, error) {
	if len(runs) == 0 {
		return nil, fmt.Errorf("ingestload: no run to publish results for")
	}
	shape = shape.withDefaults()
	keys := comboKeys(shape.Cameras)
	perRun := (n + len(runs) - 1) / len(runs)
	if (pass+1)*perRun > len(keys) {
		return nil, fmt.Errorf("ingestload: %d messages over %d runs need %d combinations a run, more than the %d there are",
			n, len(runs), (pass+1)*perRun, len(keys))
	}
	sample, err := telemetry.ParseTegrastats(fakehw.AGXOrinLine)
	if err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewPCG(uint64(pass), uint64(n)))
	out := make([]Message, 0, n)
	for i := range n {
		r := runs[i%len(runs)]
		r.Combinations = nil
		k := keys[pass*perRun+i/len(runs)]
		c := combination(rng, k, shape, sample, r.StartedAt)
		b, err := json.Marshal(protocol.ResultMessage{Schema: protocol.SchemaVersion, AgentID: r.AgentID, Run: r, Combination: &c})
		if err != nil {
			return nil, err
		}
		out = append(out, Message{
			Subject: protocol.AgentSubject(r.AgentID, protocol.KindResult),
			ID:      protocol.ResultMsgID(r.ID, c.ComboKey.String()),
			Data:    protocol.CompressPayload(b),
			JSON:    b,
		})
	}
	return out, nil
}

// comboKeys lists distinct combinations of at least cameras cameras, so
// that every message of a run can add one of its own.
func comboKeys(cameras int) []protocol.ComboKey {
	var keys []protocol.ComboKey
	for cams := cameras; cams <= protocol.MaxCameraLevel; cams++ {
		for _, size := range protocol.ImageSizes() {
			for images := 1; images <= protocol.MaxImagesInRequest; images++ {
				keys = append(keys, protocol.ComboKey{Size: size.Name, Images: images, Cameras: cams})
			}
		}
	}
	return keys
}

// combination is a measured combination of the shape: figures jittered
// around those of a 4B model on an AGX Orin at 720p.
func combination(rng *rand.Rand, k protocol.ComboKey, shape Shape, sample protocol.TelemetrySample, began time.Time) protocol.Combination {
	jitter := func(v, spread float64) float64 { return v * (1 + spread*(rng.Float64()-0.5)) }
	size, _ := protocol.LookupImageSize(k.Size)
	c := protocol.Combination{
		ComboKey: k, Width: size.Width, Height: size.Height,
		Completed: shape.Records, MaxInFlight: shape.Cameras, WallSec: shape.Seconds, Warmup: shape.Cameras,
		OutputTokensPerSec: jitter(180, 0.2),
		StartedAt:          began, FinishedAt: began.Add(time.Duration(shape.Seconds * float64(time.Second))),
	}
	for q := range shape.Records {
		ttfb := jitter(0.6, 0.3)
		ttft := ttfb + jitter(1.0, 0.3)
		e2e := ttft + jitter(3.9, 0.2)
		c.Requests = append(c.Requests, protocol.RequestRecord{
			Camera: q % shape.Cameras, Seq: q / shape.Cameras, Start: float64(q/shape.Cameras) * e2e,
			TTFB: ttfb, RoleChunk: ttfb + 0.0001, TTFT: ttft, LastToken: e2e, E2E: e2e,
			CompletionTokens: 128, TokenSource: protocol.TokensFromUsage, PromptTokens: 929,
			TPS: 127 / (e2e - ttft), ITL: (e2e - ttft) / 127, Images: k.Images, FinishReason: "length", DecodeTokens: 127,
		})
	}
	stats := func(f func(protocol.RequestRecord) float64) protocol.Stats {
		s := protocol.Stats{N: len(c.Requests), Min: f(c.Requests[0]), Max: f(c.Requests[0])}
		for _, r := range c.Requests {
			v := f(r)
			s.Mean += v / float64(len(c.Requests))
			s.Min, s.Max = min(s.Min, v), max(s.Max, v)
		}
		s.P50, s.P90, s.P99 = s.Mean, s.Max, s.Max
		return s
	}
	c.TTFT = stats(func(r protocol.RequestRecord) float64 { return r.TTFT })
	c.TPS = stats(func(r protocol.RequestRecord) float64 { return r.TPS })
	c.E2E = stats(func(r protocol.RequestRecord) float64 { return r.E2E })
	c.ITL = stats(func(r protocol.RequestRecord) float64 { return r.ITL })
	c.TTFB = stats(func(r protocol.RequestRecord) float64 { return r.TTFB })
	c.RoleChunk = stats(func(r protocol.RequestRecord) float64 { return r.RoleChunk })
	c.PromptTokens = stats(func(r protocol.RequestRecord) float64 { return float64(r.PromptTokens) })
	c.CompletionTokens = stats(func(r protocol.RequestRecord) float64 { return float64(r.CompletionTokens) })

	for i := range shape.Samples() {
		s := sample
		s.Time = began.Add(time.Duration(i) * SampleEvery)
		// tegrastats prints whole MHz, MB and percents, and watts and
		// degrees to three decimals: the figures vary at that precision.
		vary := func(v, spread float64) float64 {
			x := jitter(v+1, spread)
			if v == math.Trunc(v) {
				return math.Round(x)
			}
			return math.Round(x*1000) / 1000
		}
		p := func(v *float64, spread float64) *float64 {
			if v == nil {
				return nil
			}
			x := vary(*v, spread)
			return &x
		}
		s.GPUUtil, s.PowerW, s.TempC = p(s.GPUUtil, 0.2), p(s.PowerW, 0.3), p(s.TempC, 0.1)
		s.MemUsedMB, s.CPUUtil = p(s.MemUsedMB, 0.05), p(s.CPUUtil, 0.5)
		s.Rails = map[string]float64{}
		for name, v := range sample.Rails {
			s.Rails[name] = vary(v, 0.3)
		}
		s.Extra = map[string]float64{}
		for name, v := range sample.Extra {
			s.Extra[name] = vary(v, 0.2)
		}
		// The agent's own CPU and memory come from /proc, unrounded.
		cpu, rss := jitter(12, 0.5), jitter(64, 0.05)
		s.AgentCPU, s.AgentRSSMB = &cpu, &rss
		c.TelemetrySeries = append(c.TelemetrySeries, s)
	}
	c.Telemetry = telemetry.Summarize(c.TelemetrySeries, "tegrastats")
	return c
}

// Header is the run header an agent with a vLLM deployment on a Jetson AGX
// Orin sends for the run id of job jobID (of sweep sweepID) on agent: what
// every result message of the run carries.
func Header(id, jobID, sweepID, agent string, created time.Time) protocol.Run {
	w := protocol.DefaultWorkload()
	pinned := true
	return protocol.Run{
		Schema: protocol.SchemaVersion, ID: id, JobID: jobID, SweepID: sweepID, AgentID: agent,
		Source: protocol.SourceLab, Status: protocol.RunRunning, CreatedAt: created, StartedAt: created,
		Config:   protocol.Configuration{Model: "Qwen3-VL-4B-Instruct", ParamsB: 4.4, Quantization: "BF16", Engine: "vLLM", Device: "Jetson AGX Orin"},
		Workload: w,
		Engine: protocol.EngineInfo{
			Kind: "vllm", Name: "vLLM", Version: "0.11.0",
			Command: []string{"/opt/vllm/bin/vllm", "serve", "/models/Qwen3-VL-4B-Instruct", "--served-model-name", "Qwen3-VL-4B-Instruct",
				"--host", "127.0.0.1", "--port", "38211", "--max-num-seqs", "16", "--max-model-len", "8192", "--gpu-memory-utilization", "0.8",
				"--limit-mm-per-prompt", `{"image":8}`, "--no-enable-prefix-caching"},
			Endpoint: "http://127.0.0.1:38211/v1", Model: "Qwen3-VL-4B-Instruct",
			Props: map[string]string{"max_model_len": "8192", "served_name": "Qwen3-VL-4B-Instruct", "prefix_caching": "false"},
		},
		Device: protocol.DeviceFacts{
			Name: "Jetson AGX Orin", Kind: protocol.DeviceJetson,
			Jetson: &protocol.JetsonFacts{Model: "NVIDIA Jetson AGX Orin Developer Kit", L4T: "36.4.3", JetPack: "6.2", PowerMode: "MAXN", ClocksPinned: &pinned, MemoryMB: 62841},
			Host:   protocol.HostFacts{Hostname: agent, CPUModel: "ARMv8 Processor rev 1 (v8l)", Cores: 12, MemoryMB: 62841, Kernel: "5.15.148-tegra", OS: "ubuntu 22.04", Arch: "arm64"},
		},
		Client: protocol.ClientInfo{Name: "vlmfleet-loadgen", Version: "v0.9.0", ImageSet: "builtin",
			ImageSetHash: "5b66655170e4726a5464794245c60245037d903d9fd8e983cb17cef0d2a7809e", ImageCount: 16, Go: "go1.26.8"},
	}
}

// Publish publishes msgs as fast as JetStream acknowledges them, each
// with its message id, and returns the stream sequence of the last.
func Publish(ctx context.Context, js jetstream.JetStream, msgs []Message) (last uint64, err error) {
	var f jetstream.PubAckFuture
	for i, m := range msgs {
		if i%1000 == 999 { // the client holds at most 4,000 unacknowledged
			select {
			case <-js.PublishAsyncComplete():
			case <-ctx.Done():
				return 0, ctx.Err()
			}
		}
		if f, err = js.PublishAsync(m.Subject, m.Data, jetstream.WithMsgID(m.ID)); err != nil {
			return 0, fmt.Errorf("publish %d: %w", i, err)
		}
	}
	select {
	case <-js.PublishAsyncComplete():
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	if f == nil {
		return 0, nil
	}
	select {
	case ack := <-f.Ok():
		return ack.Sequence, nil
	case err := <-f.Err():
		return 0, fmt.Errorf("publish the last: %w", err)
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}
