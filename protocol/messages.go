package protocol

import "time"

// Deployment is one model an agent can serve, as its local configuration
// describes it. Jobs name a deployment by ID; the model path and the engine
// executable never leave the agent.
type Deployment struct {
	ID string `json:"id"`
	// Engine is the engine kind the deployment's config names.
	Engine       string  `json:"engine"`
	Model        string  `json:"model"`
	ParamsB      float64 `json:"params_b"`
	Quantization string  `json:"quantization"`
	Simulated    bool    `json:"simulated,omitempty"`
}

// AgentHello is published durably when an agent starts.
type AgentHello struct {
	Schema      int          `json:"schema"`
	AgentID     string       `json:"agent_id"`
	Hostname    string       `json:"hostname"`
	Version     string       `json:"version"`
	StartedAt   time.Time    `json:"started_at"`
	Simulated   bool         `json:"simulated"`
	Device      DeviceFacts  `json:"device"`
	Deployments []Deployment `json:"deployments"`

	// Labels are the agent's from its configuration ("site: lab1"); a
	// sweep may select agents by them (Sweep.AgentLabels).
	Labels map[string]string `json:"labels,omitempty"`

	// ---- Broken deployments ----
	// BrokenDeployments are the deployments of the agent's configuration
	// that it cannot serve, each with the reason. The agent offers only
	// Deployments; one wrong entry no longer stops the whole agent, and an
	// agent whose every entry is wrong still announces itself, so that the
	// operator sees why on the controller rather than nothing at all.
	BrokenDeployments []BrokenDeployment `json:"broken_deployments,omitempty"`

	// Power is the device's power modes or GPU power-limit range, what it
	// runs in, and whether the agent may switch; nil when it has none.
	Power *PowerControl `json:"power,omitempty"`

	// ---- One process per agent id ----
	// Level is what the agent can do for a controller (AgentLevel); a
	// hello without it is of level 1, a release from before it was sent.
	Level int `json:"level,omitempty"`
	// Instance names this process of the agent, made at each start;
	// SpoolLock names the spool lock it holds (its host, boot and spool
	// directory, hashed). A controller hearing two instances of one id at
	// once keeps the first and refuses the other, unless both name one
	// spool lock, which two live processes cannot hold: then the new one
	// is a restart. Heartbeats carry both too.
	Instance  string `json:"instance,omitempty"`
	SpoolLock string `json:"spool_lock,omitempty"`
}

// AgentLevel is what this build's agent can do for a controller, one
// number that grows each time a controller comes to need something new of
// its agents. 1: the agents before the number was sent, which make their
// own job consumer; 2: an agent that binds the consumer the controller
// makes (it may not make one) and stops when the controller refuses it as
// a second process with its id.
const AgentLevel = 2

// MinAgentLevel is the lowest agent level this build's controller serves:
// an agent below it is shown as needing an upgrade, and sweeps that name it
// are refused.
const MinAgentLevel = 2

// BrokenDeployment is a deployment an agent's configuration names but the
// agent cannot serve (part of the broken-deployments block above).
type BrokenDeployment struct {
	// ID is the deployment's id as configured; it may be empty or invalid
	// (that can be the reason), so it is a name, not a key.
	ID     string `json:"id"`
	Engine string `json:"engine,omitempty"`
	Model  string `json:"model,omitempty"`
	// Reason names the configuration entry and field and what is allowed:
	// "deployments[1].engine: model: ... not found under the model roots".
	Reason string `json:"reason"`
}

// Agent states carried by heartbeats.
const (
	AgentIdle = "idle"
	AgentBusy = "busy"
)

// Heartbeat is published on core NATS every few seconds.
type Heartbeat struct {
	Schema  int       `json:"schema"`
	AgentID string    `json:"agent_id"`
	Time    time.Time `json:"time"`
	State   string    `json:"state"`
	JobID   string    `json:"job_id,omitempty"`
	Seq     uint64    `json:"seq"`

	// Drained says the agent takes no new jobs (a Drain on its control
	// subject); the controller compares it with what it asked.
	Drained bool `json:"drained,omitempty"`

	// PowerMode and PowerLimitW are what the device runs in now (a job
	// may have switched it), for the fleet page.
	PowerMode   string  `json:"power_mode,omitempty"`
	PowerLimitW float64 `json:"power_limit_w,omitempty"`

	// Instance and SpoolLock are the hello's: which process of the agent
	// sends it.
	Instance  string `json:"instance,omitempty"`
	SpoolLock string `json:"spool_lock,omitempty"`
	// Stopping marks a process's last heartbeat as it stops, sent as a
	// request: the controller lets the next process have the agent's id at
	// once, and answers when it has.
	Stopping bool `json:"stopping,omitempty"`
}

// Job asks one agent to measure one deployment over one workload.
type Job struct {
	Schema     int       `json:"schema"`
	ID         string    `json:"id"`
	SweepID    string    `json:"sweep_id,omitempty"`
	AgentID    string    `json:"agent_id"`
	Deployment string    `json:"deployment"`
	Workload   Workload  `json:"workload"`
	CreatedAt  time.Time `json:"created_at"`
	// Power is the mode or limit the agent switches its device to before
	// the job's combinations, and restores after; zero: as found.
	Power PowerSetting `json:"power,omitzero"`
}

// JobState is where a job is in its life.
type JobState string

// Job states. queued is the controller's; the others are reported by the agent.
const (
	JobQueued    JobState = "queued"
	JobAccepted  JobState = "accepted"
	JobStarting  JobState = "starting" // engine starting
	JobRunning   JobState = "running"  // measuring
	JobCompleted JobState = "completed"
	JobFailed    JobState = "failed"
	JobCancelled JobState = "cancelled"
	JobRejected  JobState = "rejected" // invalid job, unknown deployment
)

// Terminal reports whether no further state follows.
func (s JobState) Terminal() bool {
	switch s {
	case JobCompleted, JobFailed, JobCancelled, JobRejected:
		return true
	}
	return false
}

// JobStateChange is published durably by the agent at each transition.
type JobStateChange struct {
	Schema  int       `json:"schema"`
	JobID   string    `json:"job_id"`
	SweepID string    `json:"sweep_id,omitempty"`
	RunID   string    `json:"run_id,omitempty"`
	AgentID string    `json:"agent_id"`
	State   JobState  `json:"state"`
	Error   string    `json:"error,omitempty"`
	Time    time.Time `json:"time"`
	// Attempt counts deliveries of the job to the agent, so a job redelivered
	// after an agent restart reports its states again under new message ids.
	Attempt int `json:"attempt"`
}

// ResultMessage carries results durably. Each message holds the run header
// (the Run without combinations) so the receiver can store it whatever the
// order of arrival, plus either one measured combination or, with Final, the
// run's closing status and the number of combinations it measured.
type ResultMessage struct {
	Schema      int          `json:"schema"`
	AgentID     string       `json:"agent_id"`
	Run         Run          `json:"run"`
	Combination *Combination `json:"combination,omitempty"`
	Final       bool         `json:"final,omitempty"`
	// Expected is, with Final, how many combinations were published.
	Expected int `json:"expected,omitempty"`
}

// Cancel asks an agent, on its control subject, to stop the job it runs.
// An agent not running the job ignores it: the controller removes a job
// still queued from the jobs stream itself.
type Cancel struct {
	Schema int    `json:"schema"`
	JobID  string `json:"job_id"`
	// Reason is shown with the cancelled job; optional.
	Reason string `json:"reason,omitempty"`
}

// Progress phases.
const (
	PhaseEngineStart = "engine-start"
	PhaseWarmup      = "warmup"
	PhaseMeasure     = "measure"
	PhaseDone        = "done"
)

// Progress is published on core NATS while a job runs; losing one is harmless.
type Progress struct {
	Schema    int       `json:"schema"`
	AgentID   string    `json:"agent_id"`
	JobID     string    `json:"job_id"`
	RunID     string    `json:"run_id"`
	Time      time.Time `json:"time"`
	Phase     string    `json:"phase"`
	Combo     ComboKey  `json:"combo"`
	ComboIdx  int       `json:"combo_idx"`
	ComboN    int       `json:"combo_n"`
	Done      int       `json:"done"`
	Failed    int       `json:"failed"`
	Total     int       `json:"total"`
	InFlight  int       `json:"in_flight"`
	LastTTFT  float64   `json:"last_ttft,omitempty"`
	MeanTTFT  float64   `json:"mean_ttft,omitempty"`
	Message   string    `json:"message,omitempty"`
	Simulated bool      `json:"simulated,omitempty"`
}

// TelemetryTick is one live telemetry sample on core NATS.
type TelemetryTick struct {
	Schema  int             `json:"schema"`
	AgentID string          `json:"agent_id"`
	JobID   string          `json:"job_id,omitempty"`
	Sample  TelemetrySample `json:"sample"`
}

// Sweep asks the controller to measure deployments on agents. Agents and
// Deployments select by id; empty means all. A job is made for every agent
// that offers a selected deployment.
type Sweep struct {
	ID          string    `json:"id"`
	Name        string    `json:"name,omitempty"`
	Agents      []string  `json:"agents,omitempty"`
	Deployments []string  `json:"deployments,omitempty"`
	Workload    Workload  `json:"workload"`
	CreatedAt   time.Time `json:"created_at"`
	Jobs        []string  `json:"jobs,omitempty"`

	// AgentLabels selects the agents carrying every one of these labels
	// (their configuration's "labels"); with Agents, each named agent must
	// carry them too.
	AgentLabels map[string]string `json:"agent_labels,omitempty"`

	// PowerModes and PowerLimitsW are the sweep's power axis, modes then
	// limits: every selected agent is measured once per setting its device
	// has, modes on a Jetson, limits on a GPU host; one that has none of
	// them is measured at its current setting (Notes say so). A setting no
	// selected agent has, or one an agent has but may not switch to,
	// refuses the sweep before any job is published.
	PowerModes   []string  `json:"power_modes,omitempty"`
	PowerLimitsW []float64 `json:"power_limits_w,omitempty"`

	// Skipped are the agents the sweep's selection passed over, each with
	// why: drained, or serving none of its deployments (a configuration
	// entry that is wrong says so). The controller sets it; a sweep as
	// submitted has none.
	Skipped []SkippedAgent `json:"skipped,omitempty"`

	// Notes say of an agent that the sweep measures it otherwise than its
	// power axis names: at its current setting, none of the axis's being
	// of its device, or in only the modes or limits its device has. The
	// controller sets it.
	Notes []AgentNote `json:"notes,omitempty"`
}

// AgentNote is something a sweep says of one of its agents.
type AgentNote struct {
	AgentID string `json:"agent_id"`
	Note    string `json:"note"`
}

// SkippedAgent is an agent a sweep's selection passed over, and why.
type SkippedAgent struct {
	AgentID string `json:"agent_id"`
	Reason  string `json:"reason"`
}
