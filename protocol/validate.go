package protocol

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
)

// MaxMessageBytes bounds any document a receiver will decode.
const MaxMessageBytes = 8 << 20

// decode parses one JSON document of type T, checks its schema version,
// then checks the document with check, whose error is prefixed with what.
// Unknown fields are allowed (a newer minor writer may add some) but a newer
// schema is refused.
func decode[T any](what string, data []byte, schema func(*T) int, check func(*T) error) (*T, error) {
	if len(data) > MaxMessageBytes {
		return nil, fmt.Errorf("%s: %d bytes, more than the %d allowed", what, len(data), MaxMessageBytes)
	}
	var v T
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("%s: %w", what, DescribeJSONError(data, dec.InputOffset(), err))
	}
	if dec.More() {
		return nil, fmt.Errorf("%s: trailing data after the JSON document", what)
	}
	if s := schema(&v); s < 1 || s > SchemaVersion {
		return nil, fmt.Errorf("%s: schema %d, this build reads schema 1..%d", what, s, SchemaVersion)
	}
	if err := check(&v); err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return &v, nil
}

// DescribeJSONError turns an encoding/json decoder error into one that names
// the line and column, for every decoder of network or file input. at is
// the decoder's input offset, used where the error carries none.
func DescribeJSONError(data []byte, at int64, err error) error {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		// The offset is just past the byte that was wrong.
		l, c := LineCol(data, syn.Offset-1)
		return fmt.Errorf("line %d column %d: %v", l, c, syn)
	case errors.As(err, &typ):
		l, c := LineCol(data, typ.Offset)
		return fmt.Errorf("line %d column %d: field %q: got JSON %s, want %s", l, c, typ.Field, typ.Value, typ.Type)
	case errors.Is(err, io.EOF):
		return errors.New("empty; want a JSON document")
	case errors.Is(err, io.ErrUnexpectedEOF):
		l, c := LineCol(data, int64(len(data)))
		return fmt.Errorf("line %d column %d: the document ends before it is complete", l, c)
	}
	l, c := LineCol(data, at)
	return fmt.Errorf("line %d column %d: %w", l, c, err)
}

// LineCol is the 1-based line and column of byte offset off in data.
func LineCol(data []byte, off int64) (int, int) {
	off = max(0, min(off, int64(len(data))))
	prefix := data[:off]
	line := bytes.Count(prefix, []byte("\n")) + 1
	col := int(off) - bytes.LastIndexByte(prefix, '\n')
	return line, col
}

// DecodeRun reads and validates a result document.
func DecodeRun(data []byte) (*Run, error) {
	return decode("result document", data, func(r *Run) int { return r.Schema }, (*Run).Validate)
}

// DecodeJob reads and validates a job. A job that reads and says whose it
// is, but asks what no agent may run (a workload past the limits, no
// deployment), is refused with a *RefusedJobError that carries it, so
// that its agent can report it rejected, saying why.
func DecodeJob(data []byte) (*Job, error) {
	job, err := decode("job", data, func(j *Job) int { return j.Schema }, (*Job).validateAddress)
	if err != nil {
		return nil, err
	}
	if err := job.Validate(); err != nil {
		return nil, &RefusedJobError{Job: job, Err: err}
	}
	return job, nil
}

// RefusedJobError is a job DecodeJob refused for what it asks: Job holds
// what it read of it, of which only the address (id, agent, sweep) was
// checked, and Err is why, naming the field.
type RefusedJobError struct {
	Job *Job
	Err error
}

func (e *RefusedJobError) Error() string { return "job: " + e.Err.Error() }
func (e *RefusedJobError) Unwrap() error { return e.Err }

// validateAddress checks what a job's refusal is reported under: its id,
// its agent and its sweep.
func (j *Job) validateAddress() error {
	if err := ValidateID("id", j.ID); err != nil {
		return err
	}
	if err := ValidateAgentID(j.AgentID); err != nil {
		return err
	}
	return checkLen("sweep_id", j.SweepID, MaxNameLen)
}

// DecodeJobStateChange reads and validates a job state change.
func DecodeJobStateChange(data []byte) (*JobStateChange, error) {
	return decode("job state", data, func(s *JobStateChange) int { return s.Schema }, (*JobStateChange).validate)
}

func (s *JobStateChange) validate() error {
	if err := ValidateID("job_id", s.JobID); err != nil {
		return err
	}
	if s.RunID != "" {
		if err := ValidateID("run_id", s.RunID); err != nil {
			return err
		}
	}
	if err := ValidateAgentID(s.AgentID); err != nil {
		return err
	}
	switch s.State {
	case JobAccepted, JobStarting, JobRunning, JobCompleted, JobFailed, JobCancelled, JobRejected:
	default:
		return fmt.Errorf("state %.40q is not one an agent reports", s.State)
	}
	if err := checkLen("sweep_id", s.SweepID, MaxNameLen); err != nil {
		return err
	}
	return checkLen("error", s.Error, MaxTextLen)
}

// DecodeResultMessage reads and validates a result message, which may be
// compressed (CompressPayload).
func DecodeResultMessage(data []byte) (*ResultMessage, error) {
	const what = "result message"
	// Uncompress bounds what it makes, decode the JSON: the compressed
	// input is bounded here, before anything is made of it.
	if len(data) > MaxMessageBytes {
		return nil, fmt.Errorf("%s: %d bytes, more than the %d allowed", what, len(data), MaxMessageBytes)
	}
	js, err := Uncompress(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return decode(what, js, func(m *ResultMessage) int { return m.Schema }, (*ResultMessage).Validate)
}

// Validate checks a result message: its agent, its run's header, and its
// combination, if any; a message carries a combination, is final, or
// both. A run header without a schema takes the message's.
func (m *ResultMessage) Validate() error {
	if m.Run.Schema == 0 {
		m.Run.Schema = m.Schema
	}
	if err := ValidateAgentID(m.AgentID); err != nil {
		return err
	}
	if err := m.Run.validateHeader(); err != nil {
		return fmt.Errorf("run: %w", err)
	}
	if m.Combination == nil && !m.Final {
		return errors.New("carries neither a combination nor final")
	}
	if m.Combination != nil {
		return m.Combination.Validate()
	}
	return nil
}

// DecodeCancel reads and validates a job cancellation.
func DecodeCancel(data []byte) (*Cancel, error) {
	return decode("cancel", data, func(c *Cancel) int { return c.Schema }, (*Cancel).Validate)
}

// Validate checks a cancellation before it is sent.
func (c *Cancel) Validate() error {
	if err := ValidateID("job_id", c.JobID); err != nil {
		return err
	}
	if len(c.Reason) > 1000 {
		return fmt.Errorf("reason: %d bytes, at most 1000", len(c.Reason))
	}
	return nil
}

// DecodeAgentHello reads and validates an agent announcement.
func DecodeAgentHello(data []byte) (*AgentHello, error) {
	return decode("agent hello", data, func(h *AgentHello) int { return h.Schema }, (*AgentHello).validate)
}

func (h *AgentHello) validate() error {
	if err := ValidateAgentID(h.AgentID); err != nil {
		return err
	}
	if err := checkNames(MaxNameLen, "hostname", h.Hostname, "version", h.Version); err != nil {
		return err
	}
	if err := validateInstance(h.Instance, h.SpoolLock); err != nil {
		return err
	}
	if h.Level < 0 || h.Level > maxAgentLevel {
		return fmt.Errorf("level: %d, want 1 to %d", h.Level, maxAgentLevel)
	}
	if err := h.Device.validate("device."); err != nil {
		return err
	}
	if err := ValidateLabels("labels", h.Labels); err != nil {
		return err
	}
	if len(h.Deployments) > MaxListLen {
		return fmt.Errorf("deployments: %d, at most %d", len(h.Deployments), MaxListLen)
	}
	for i, d := range h.Deployments {
		if d.ID == "" {
			return fmt.Errorf("deployments[%d].id is empty", i)
		}
		p := fmt.Sprintf("deployments[%d].", i)
		if err := checkNames(MaxNameLen, p+"id", d.ID, p+"engine", d.Engine, p+"model", d.Model, p+"quantization", d.Quantization); err != nil {
			return err
		}
		if err := checkFigure(p+"params_b", d.ParamsB); err != nil {
			return err
		}
	}
	if h.Power != nil {
		if err := h.Power.validate("power."); err != nil {
			return err
		}
	}
	return h.validateBroken()
}

// validateBroken checks the broken-deployments block of a hello.
// maxAgentLevel bounds a hello's level: far past AgentLevel is a typo or
// garbage, not a release.
const maxAgentLevel = 1000

// maxInstanceLen bounds an instance's and a spool lock's names.
const maxInstanceLen = 64

// validateInstance checks the names of an agent's process and spool lock:
// at most maxInstanceLen letters and digits each, or empty.
func validateInstance(instance, spoolLock string) error {
	for _, f := range []struct{ name, v string }{{"instance", instance}, {"spool_lock", spoolLock}} {
		if len(f.v) > maxInstanceLen {
			return fmt.Errorf("%s: %d bytes, at most %d", f.name, len(f.v), maxInstanceLen)
		}
		for _, r := range f.v {
			if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
				return fmt.Errorf("%s: %.70q has %q; want letters and digits", f.name, f.v, r)
			}
		}
	}
	return nil
}

func (h *AgentHello) validateBroken() error {
	if len(h.BrokenDeployments) > MaxListLen {
		return fmt.Errorf("broken_deployments: %d, at most %d", len(h.BrokenDeployments), MaxListLen)
	}
	for i, d := range h.BrokenDeployments {
		p := fmt.Sprintf("broken_deployments[%d].", i)
		if strings.TrimSpace(d.Reason) == "" {
			return fmt.Errorf("%sreason is empty; a broken deployment says why", p)
		}
		if err := checkNames(MaxNameLen, p+"id", d.ID, p+"engine", d.Engine, p+"model", d.Model); err != nil {
			return err
		}
		if err := checkNames(MaxLineLen, p+"reason", d.Reason); err != nil {
			return err
		}
	}
	return nil
}

// Validate checks a job before it is published or run.
func (j *Job) Validate() error {
	if err := j.validateAddress(); err != nil {
		return err
	}
	if j.Deployment == "" {
		return fmt.Errorf("deployment is empty")
	}
	if err := checkLen("deployment", j.Deployment, MaxNameLen); err != nil {
		return err
	}
	if err := j.Power.Validate("power"); err != nil {
		return err
	}
	return j.Workload.Validate()
}

func (r *Run) validateHeader() error {
	if err := ValidateID("id", r.ID); err != nil {
		return err
	}
	if strings.TrimSpace(r.Config.Model) == "" {
		return fmt.Errorf("config.model is empty")
	}
	switch r.Status {
	case RunRunning, RunCompleted, RunFailed, RunCancelled:
	default:
		return fmt.Errorf("status %.40q: want running, completed, failed or cancelled", r.Status)
	}
	if err := r.validateStrings(); err != nil {
		return err
	}
	if err := checkFigure("config.params_b", r.Config.ParamsB); err != nil {
		return err
	}
	if err := checkFigure("config.power_limit_w", r.Config.PowerLimitW); err != nil {
		return err
	}
	if err := checkFigure("sim_speedup", r.SimSpeedup); err != nil {
		return err
	}
	if p := r.IdlePower; p != nil {
		if err := p.validate(); err != nil {
			return err
		}
	}
	return r.validateTimes()
}

// Validate checks a whole result document.
func (r *Run) Validate() error {
	if err := r.validateHeader(); err != nil {
		return err
	}
	if err := r.Workload.Validate(); err != nil {
		return err
	}
	seen := map[ComboKey]bool{}
	for i := range r.Combinations {
		c := &r.Combinations[i]
		if err := c.Validate(); err != nil {
			return fmt.Errorf("combinations[%d]: %w", i, err)
		}
		if seen[c.ComboKey] {
			return fmt.Errorf("combinations[%d]: %s is listed twice", i, c.ComboKey)
		}
		seen[c.ComboKey] = true
	}
	return nil
}

// Validate checks one combination's key and figures.
func (c *Combination) Validate() error {
	if c.Profile != nil {
		if err := c.validateProfileKey(); err != nil {
			return fmt.Errorf("%s: %w", c.ComboKey, err)
		}
	} else {
		if _, err := LookupImageSize(c.Size); err != nil {
			return err
		}
		if c.Images < 1 || c.Images > MaxImagesInRequest {
			return fmt.Errorf("%s: images %d, want 1..%d", c.ComboKey, c.Images, MaxImagesInRequest)
		}
		if c.ISL != 0 || c.OSL != 0 {
			return fmt.Errorf("%s: isl and osl on a camera level, want them only with its profile figures", c.ComboKey)
		}
	}
	if c.Cameras < 1 || c.Cameras > MaxCameraLevel {
		return fmt.Errorf("%s: cameras %d, want 1..%d", c.ComboKey, c.Cameras, MaxCameraLevel)
	}
	if c.FrameIntervalSec != 0 {
		if err := checkFrameInterval("frame_interval_sec", c.FrameIntervalSec); err != nil {
			return fmt.Errorf("%s: %w", c.ComboKey, err)
		}
	}
	if err := c.validateFigures(); err != nil {
		return fmt.Errorf("%s: %w", c.ComboKey, err)
	}
	if err := c.validateBuyerFigures(); err != nil {
		return fmt.Errorf("%s: %w", c.ComboKey, err)
	}
	return nil
}

// validateProfileKey checks a profile level's key against its figures: its
// size is the pictures' "WxH" (or, sending none, any), its cameras its
// concurrency, its lengths the profile's.
func (c *Combination) validateProfileKey() error {
	p := c.Profile
	if c.Images < 0 || c.Images > MaxImagesInRequest {
		return fmt.Errorf("images %d, want 0..%d", c.Images, MaxImagesInRequest)
	}
	if c.Images > 0 {
		r, err := ParseResolution(c.Size)
		if err != nil {
			return fmt.Errorf("size: %w", err)
		}
		if r != p.Resolution {
			return fmt.Errorf("size %s, but the profile's figures are of %s pictures", c.Size, p.Resolution)
		}
	}
	if c.ISL != p.ISL || c.OSL != p.OSL {
		return fmt.Errorf("isl/osl %d/%d, but the profile's figures are of %d/%d", c.ISL, c.OSL, p.ISL, p.OSL)
	}
	if p.OSL < 1 || p.OSL > MaxProfileTokens || p.ISL < 0 || p.ISL > MaxProfileTokens {
		return fmt.Errorf("isl/osl %d/%d, want isl 0..%d and osl 1..%d", p.ISL, p.OSL, MaxProfileTokens, MaxProfileTokens)
	}
	if p.Concurrency != c.Cameras {
		return fmt.Errorf("concurrency %d, but the level's key says %d", p.Concurrency, c.Cameras)
	}
	for _, f := range []struct {
		name string
		v    float64
	}{{"request_latency_ms", p.RequestLatencyMs}, {"request_throughput", p.RequestThroughput},
		{"output_tokens_per_sec", p.OutputTokensPerSec}, {"prompt_tokens", p.PromptTokens}, {"osl_mean", p.OSLMean}} {
		if math.IsNaN(f.v) || math.IsInf(f.v, 0) || f.v < 0 {
			return fmt.Errorf("profile.%s: %v, want a finite number 0 or more", f.name, f.v)
		}
	}
	for _, f := range []struct {
		name string
		v    *float64
	}{{"ttft_ms", p.TTFTMs}, {"itl_ms", p.ITLMs}} {
		if f.v != nil && (math.IsNaN(*f.v) || math.IsInf(*f.v, 0) || *f.v < 0) {
			return fmt.Errorf("profile.%s: %v, want a finite number 0 or more, or null", f.name, *f.v)
		}
	}
	return nil
}
