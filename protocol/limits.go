package protocol

import (
	"fmt"
	"math"
	"sort"
	"time"
	"unicode/utf8"
)

// Limits on what a receiver accepts, beyond MaxMessageBytes: a document
// within them is one the explorer and the store can show and keep.
const (
	// MaxNameLen bounds a name: a model, an engine, a device, a
	// quantization, a version, a kind, an id that is not a store key.
	MaxNameLen = 256
	// MaxLineLen bounds one line of text: a request's error, a device
	// warning, an endpoint, a path, a command argument, an engine property.
	MaxLineLen = 4 << 10
	// MaxTextLen bounds text of many lines: a run's or a job's error (which
	// carries the engine's 8 KiB log tail), an engine log tail, the prompt.
	MaxTextLen = 32 << 10
	// MaxListLen bounds the lists of names a document carries (command
	// arguments, engine properties, device warnings, GPUs, deployments,
	// llama.cpp timings).
	MaxListLen = 1024

	// MaxRequestTimeoutSec bounds a workload's request timeout (24 h), so
	// that it always fits a time.Duration.
	MaxRequestTimeoutSec = 24 * 60 * 60

	// MaxRequestsInCombination is the most requests one combination of a
	// valid workload measures: a level sends max(requests, cameras).
	MaxRequestsInCombination = max(MaxRequestsPerComb, MaxCameraLevel)

	// MaxClockSkew is how far a run's started_at may be before its
	// created_at: the two may come from different clocks (a header kept
	// from an earlier attempt, a controller and an agent).
	MaxClockSkew = 5 * time.Minute
)

// checkLen refuses s when it is longer than limit bytes.
func checkLen(field, s string, limit int) error {
	if len(s) > limit {
		return fmt.Errorf("%s: %d bytes, at most %d", field, len(s), limit)
	}
	return nil
}

// checkNames checks several fields against one limit, in order.
func checkNames(limit int, fields ...string) error {
	for i := 0; i+1 < len(fields); i += 2 {
		if err := checkLen(fields[i], fields[i+1], limit); err != nil {
			return err
		}
	}
	return nil
}

// checkFigure refuses a measured figure that is not a finite number, 0 or more.
func checkFigure(field string, v float64) error {
	return checkFigureOf("", field, v)
}

// checkFigureOf is checkFigure of the field prefix+name, which it names
// only when it refuses the figure: a result's many figures are checked at
// every message, and making their names was most of the checks' cost.
func checkFigureOf(prefix, name string, v float64) error {
	if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
		return fmt.Errorf("%s%s: %g, want 0 or more", prefix, name, v)
	}
	return nil
}

// checkCount refuses a count outside 0..hi.
func checkCount(field string, n, hi int) error {
	if n < 0 || n > hi {
		return fmt.Errorf("%s: %d, want 0..%d", field, n, hi)
	}
	return nil
}

// checkOrder refuses a finish before a start when both are set.
func checkOrder(prefix string, started, finished time.Time) error {
	if !started.IsZero() && !finished.IsZero() && finished.Before(started) {
		return fmt.Errorf("%sfinished_at %s is before started_at %s", prefix,
			finished.Format(time.RFC3339Nano), started.Format(time.RFC3339Nano))
	}
	return nil
}

// checkStringMap bounds a map of names to lines, reporting keys in order.
func checkStringMap(field string, m map[string]string) error {
	if len(m) > MaxListLen {
		return fmt.Errorf("%s: %d entries, at most %d", field, len(m), MaxListLen)
	}
	ok := true
	for k, v := range m {
		ok = ok && len(k) <= MaxNameLen && len(v) <= MaxLineLen
	}
	if ok {
		return nil
	}
	for _, k := range sortedKeys(m) {
		if err := checkLen(fmt.Sprintf("%s key %.40q", field, k), k, MaxNameLen); err != nil {
			return err
		}
		if err := checkLen(fmt.Sprintf("%s[%q]", field, k), m[k], MaxLineLen); err != nil {
			return err
		}
	}
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Validate checks a heartbeat: its agent, its state (one of the Agent*
// states; empty, which receivers read as idle, is accepted) and its job.
func (h *Heartbeat) Validate() error {
	if err := ValidateAgentID(h.AgentID); err != nil {
		return err
	}
	switch h.State {
	case AgentIdle, AgentBusy, "":
	default:
		return fmt.Errorf("state %.40q: want %s or %s", h.State, AgentIdle, AgentBusy)
	}
	if h.JobID != "" {
		if err := ValidateID("job_id", h.JobID); err != nil {
			return err
		}
	}
	if err := checkFigure("power_limit_w", h.PowerLimitW); err != nil {
		return err
	}
	if err := validateInstance(h.Instance, h.SpoolLock); err != nil {
		return err
	}
	return PowerSetting{Mode: h.PowerMode}.Validate("power")
}

// DecodeHeartbeat reads and validates a heartbeat.
func DecodeHeartbeat(data []byte) (*Heartbeat, error) {
	return decode("heartbeat", data, func(h *Heartbeat) int { return h.Schema }, (*Heartbeat).Validate)
}

// validateStrings bounds every text of a run header.
func (r *Run) validateStrings() error {
	if err := checkNames(MaxNameLen,
		"job_id", r.JobID, "sweep_id", r.SweepID, "agent_id", r.AgentID, "source", r.Source,
		"config.model", r.Config.Model, "config.quantization", r.Config.Quantization,
		"config.engine", r.Config.Engine, "config.device", r.Config.Device, "config.power_mode", r.Config.PowerMode,
		"engine.kind", r.Engine.Kind, "engine.name", r.Engine.Name, "engine.version", r.Engine.Version,
		"client.name", r.Client.Name, "client.version", r.Client.Version,
		"client.image_set_hash", r.Client.ImageSetHash, "client.go", r.Client.Go,
	); err != nil {
		return err
	}
	if err := checkNames(MaxLineLen,
		"origin", r.Origin, "engine.endpoint", r.Engine.Endpoint, "engine.model", r.Engine.Model,
		"client.image_set", r.Client.ImageSet,
	); err != nil {
		return err
	}
	if err := checkNames(MaxTextLen, "error", r.Error, "engine.log_tail", r.Engine.LogTail); err != nil {
		return err
	}
	if len(r.Engine.Command) > MaxListLen {
		return fmt.Errorf("engine.command: %d arguments, at most %d", len(r.Engine.Command), MaxListLen)
	}
	for i, a := range r.Engine.Command {
		if len(a) > MaxLineLen {
			return checkLen(fmt.Sprintf("engine.command[%d]", i), a, MaxLineLen)
		}
	}
	if err := checkStringMap("engine.props", r.Engine.Props); err != nil {
		return err
	}
	if len(r.Warnings) > MaxListLen {
		return fmt.Errorf("warnings: %d, at most %d", len(r.Warnings), MaxListLen)
	}
	for i, w := range r.Warnings {
		if len(w) > MaxLineLen {
			return checkLen(fmt.Sprintf("warnings[%d]", i), w, MaxLineLen)
		}
	}
	return r.Device.validate("device.")
}

// validate bounds the device facts; prefix names where they are.
func (d *DeviceFacts) validate(prefix string) error {
	if err := checkNames(MaxNameLen,
		prefix+"name", d.Name, prefix+"kind", d.Kind,
		prefix+"host.hostname", d.Host.Hostname, prefix+"host.cpu_model", d.Host.CPUModel,
		prefix+"host.kernel", d.Host.Kernel, prefix+"host.os", d.Host.OS, prefix+"host.arch", d.Host.Arch,
	); err != nil {
		return err
	}
	if j := d.Jetson; j != nil {
		if err := checkNames(MaxNameLen,
			prefix+"jetson.model", j.Model, prefix+"jetson.l4t", j.L4T,
			prefix+"jetson.jetpack", j.JetPack, prefix+"jetson.power_mode", j.PowerMode,
		); err != nil {
			return err
		}
	}
	if len(d.GPUs) > MaxListLen {
		return fmt.Errorf("%sgpus: %d, at most %d", prefix, len(d.GPUs), MaxListLen)
	}
	for i, g := range d.GPUs {
		p := fmt.Sprintf("%sgpus[%d].", prefix, i)
		if err := checkNames(MaxNameLen,
			p+"name", g.Name, p+"uuid", g.UUID, p+"driver", g.Driver, p+"cuda", g.CUDA, p+"compute_cap", g.ComputeCap,
		); err != nil {
			return err
		}
	}
	if len(d.Warnings) > MaxListLen {
		return fmt.Errorf("%swarnings: %d, at most %d", prefix, len(d.Warnings), MaxListLen)
	}
	for i, w := range d.Warnings {
		if len(w) > MaxLineLen {
			return checkLen(fmt.Sprintf("%swarnings[%d]", prefix, i), w, MaxLineLen)
		}
	}
	return nil
}

// validateTimes checks the order of a run's times: finished_at not before
// started_at, started_at not before created_at by more than MaxClockSkew.
func (r *Run) validateTimes() error {
	if err := checkOrder("", r.StartedAt, r.FinishedAt); err != nil {
		return err
	}
	if !r.CreatedAt.IsZero() && !r.StartedAt.IsZero() && r.StartedAt.Before(r.CreatedAt.Add(-MaxClockSkew)) {
		return fmt.Errorf("started_at %s is before created_at %s by more than %s",
			r.StartedAt.Format(time.RFC3339Nano), r.CreatedAt.Format(time.RFC3339Nano), MaxClockSkew)
	}
	if !r.CreatedAt.IsZero() && !r.FinishedAt.IsZero() && r.FinishedAt.Before(r.CreatedAt.Add(-MaxClockSkew)) {
		return fmt.Errorf("finished_at %s is before created_at %s by more than %s",
			r.FinishedAt.Format(time.RFC3339Nano), r.CreatedAt.Format(time.RFC3339Nano), MaxClockSkew)
	}
	return nil
}

// validateFigures checks a combination's counts, summaries, times and
// request records.
func (c *Combination) validateFigures() error {
	const most = MaxRequestsInCombination
	if err := checkCount("completed", c.Completed, most); err != nil {
		return err
	}
	if err := checkCount("failed", c.Failed, most); err != nil {
		return err
	}
	if err := checkCount("warmup", c.Warmup, most); err != nil {
		return err
	}
	if err := checkCount("cached_prompt_tokens", c.CachedPromptTokens, math.MaxInt32); err != nil {
		return err
	}
	if err := checkCount("cached_requests", c.CachedRequests, c.Completed); err != nil {
		return err
	}
	if err := checkCount("max_in_flight", c.MaxInFlight, c.Cameras); err != nil {
		return err
	}
	if err := checkCount("width", c.Width, 1<<16); err != nil {
		return err
	}
	if err := checkCount("height", c.Height, 1<<16); err != nil {
		return err
	}
	if err := checkFigure("wall_sec", c.WallSec); err != nil {
		return err
	}
	if err := checkFigure("output_tokens_per_sec", c.OutputTokensPerSec); err != nil {
		return err
	}
	if err := checkOrder("", c.StartedAt, c.FinishedAt); err != nil {
		return err
	}
	failures := 0
	for i, e := range c.Errors {
		if err := checkLen(fmt.Sprintf("errors[%d].error", i), e.Error, MaxLineLen); err != nil {
			return err
		}
		if e.Count < 1 || e.Count > most {
			return fmt.Errorf("errors[%d].count: %d, want 1..%d", i, e.Count, most)
		}
		failures += e.Count
	}
	if failures > c.Failed {
		return fmt.Errorf("errors count %d failures, more than failed %d", failures, c.Failed)
	}
	for _, s := range []struct {
		name string
		st   *Stats
	}{
		{"ttft", &c.TTFT}, {"tps", &c.TPS}, {"e2e", &c.E2E}, {"itl", &c.ITL}, {"ttfb", &c.TTFB},
		{"role_chunk", &c.RoleChunk}, {"prompt_tokens", &c.PromptTokens}, {"completion_tokens", &c.CompletionTokens},
	} {
		if err := s.st.validate(s.name, c.Completed); err != nil {
			return err
		}
	}
	if len(c.Requests) == 0 {
		// A summary without records (an imported run) keeps its counts.
		return nil
	}
	if len(c.Requests) > most {
		return fmt.Errorf("requests: %d records, at most %d", len(c.Requests), most)
	}
	if c.Completed+c.Failed != len(c.Requests) {
		return fmt.Errorf("completed %d + failed %d = %d, but %d request records",
			c.Completed, c.Failed, c.Completed+c.Failed, len(c.Requests))
	}
	for i := range c.Requests {
		if err := c.Requests[i].validate(); err != nil {
			return fmt.Errorf("requests[%d].%w", i, err)
		}
	}
	return nil
}

// validate checks one summary; it counts at most n values.
func (s *Stats) validate(name string, n int) error {
	if s.N < 0 || s.N > n {
		return fmt.Errorf("%s.n: %d, want 0..%d (the completed requests)", name, s.N, n)
	}
	for _, f := range []struct {
		name string
		v    float64
	}{{"mean", s.Mean}, {"p50", s.P50}, {"p90", s.P90}, {"p99", s.P99}, {"min", s.Min}, {"max", s.Max}} {
		if err := checkFigureOf(name+".", f.name, f.v); err != nil {
			return err
		}
	}
	return nil
}

// validate checks one request record; its error names the field of the
// record.
func (q *RequestRecord) validate() error {
	for _, f := range []struct {
		name string
		v    float64
	}{
		{"start", q.Start}, {"ttfb", q.TTFB}, {"role_chunk", q.RoleChunk}, {"ttft", q.TTFT},
		{"last_token", q.LastToken}, {"e2e", q.E2E}, {"tps", q.TPS}, {"itl", q.ITL},
	} {
		if err := checkFigure(f.name, f.v); err != nil {
			return err
		}
	}
	for _, n := range []struct {
		name  string
		v, hi int
	}{
		{"camera", q.Camera, MaxCameraLevel}, {"seq", q.Seq, MaxRequestsInCombination},
		{"completion_tokens", q.CompletionTokens, math.MaxInt32}, {"prompt_tokens", q.PromptTokens, math.MaxInt32},
		{"images", q.Images, MaxImagesInRequest},
		{"decode_tokens", q.DecodeTokens, math.MaxInt32}, {"cached_tokens", q.CachedTokens, math.MaxInt32},
	} {
		if err := checkCount(n.name, n.v, n.hi); err != nil {
			return err
		}
	}
	if err := checkNames(MaxNameLen, "token_source", q.TokenSource, "finish_reason", q.FinishReason); err != nil {
		return err
	}
	if err := checkLen("error", q.Error, MaxLineLen); err != nil {
		return err
	}
	if len(q.Timings) > MaxListLen {
		return fmt.Errorf("timings: %d entries, at most %d", len(q.Timings), MaxListLen)
	}
	if len(q.Timings) == 0 {
		return nil
	}
	for _, k := range sortedKeys(q.Timings) {
		if err := checkLen(fmt.Sprintf("timings key %.40q", k), k, MaxNameLen); err != nil {
			return err
		}
		if v := q.Timings[k]; math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("timings[%q]: %g, want a finite number", k, v)
		}
	}
	return nil
}

// Clip cuts s to at most n bytes on a character boundary, ending it with
// mark where it was cut, so that a text cut to a limit still reads as
// UTF-8 and shows that it was cut.
func Clip(s string, n int, mark string) string {
	if len(s) <= n {
		return s
	}
	cut := n - len(mark)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:max(cut, 0)] + mark
}
