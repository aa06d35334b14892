package api

import (
	"time"

	"github.com/vlmfleet/vlmfleet/protocol"
)

// AgentView is an agent as the API shows it.
type AgentView struct {
	ID          string                `json:"id"`
	Hostname    string                `json:"hostname"`
	Version     string                `json:"version"`
	Simulated   bool                  `json:"simulated"`
	Device      protocol.DeviceFacts  `json:"device"`
	Deployments []protocol.Deployment `json:"deployments"`
	// BrokenDeployments are the deployments the agent's configuration
	// names but the agent cannot serve, with the reason (its hello's).
	BrokenDeployments []protocol.BrokenDeployment `json:"broken_deployments"`
	Online            bool                        `json:"online"`
	LastSeen          time.Time                   `json:"last_seen"`
	// State is the last heartbeat's idle or busy, or offline.
	State     string    `json:"state"`
	JobID     string    `json:"job_id,omitempty"`
	StartedAt time.Time `json:"started_at"`
	FirstSeen time.Time `json:"first_seen"`

	// Labels are the agent's from its configuration (its hello's).
	Labels map[string]string `json:"labels"`
	// Drained is true once an operator drained the agent: it gets no new
	// jobs. DrainConfirmed says its heartbeats report the drain, so it
	// fetches no more jobs (it may still finish the one it runs).
	Drained        bool      `json:"drained"`
	DrainedAt      time.Time `json:"drained_at,omitzero"`
	DrainConfirmed bool      `json:"drain_confirmed"`

	// Power is the device's power modes or GPU power-limit range and
	// whether the agent may switch (its hello's); PowerMode and
	// PowerLimitW are what it runs in now, by its last heartbeat, or by
	// its hello before the first.
	Power       *protocol.PowerControl `json:"power,omitempty"`
	PowerMode   string                 `json:"power_mode,omitempty"`
	PowerLimitW float64                `json:"power_limit_w,omitempty"`

	// EnrolledAt is when the agent's NATS identity was made, and
	// EnrolledByToken the join token it enrolled with (empty for
	// credentials made with agent-creds create).
	EnrolledAt      time.Time `json:"enrolled_at,omitzero"`
	EnrolledByToken string    `json:"enrolled_by_token,omitempty"`
	// RevokedAt is when its credentials were revoked: it cannot connect,
	// and it never counts as silent.
	RevokedAt time.Time `json:"revoked_at,omitzero"`

	// Upgrade says that this controller cannot serve the agent's release,
	// and what it needs; nil when it can.
	Upgrade *AgentUpgrade `json:"upgrade,omitempty"`
	// Duplicates are the other processes that claim the agent's id while
	// it runs (another host, or another spool on the same one), refused
	// by the controller; listed until each stops.
	Duplicates []AgentDuplicate `json:"duplicates,omitempty"`
}

// AgentForgotten is the answer to DELETE /api/agents/{id}.
type AgentForgotten struct {
	AgentID     string    `json:"agent_id"`
	ForgottenAt time.Time `json:"forgotten_at"`
}

// AgentUpgrade is why an agent needs an upgrade before it takes a job.
type AgentUpgrade struct {
	// Version and Level are the agent's release and agent level
	// (protocol.AgentLevel) by its hello; NeedsLevel the lowest this
	// controller serves and NeedsVersion the controller's own release.
	Version      string `json:"version"`
	Level        int    `json:"level"`
	NeedsLevel   int    `json:"needs_level"`
	NeedsVersion string `json:"needs_version"`
	// Reason says it in words, with what to do.
	Reason string `json:"reason"`
}

// AgentDuplicate is a second process claiming an agent's id.
type AgentDuplicate struct {
	Hostname  string    `json:"hostname"`
	StartedAt time.Time `json:"started_at,omitzero"`
	// Instance is the process's own id (protocol.AgentHello.Instance).
	Instance string    `json:"instance"`
	LastSeen time.Time `json:"last_seen"`
}

// JobView is a job as the API shows it.
type JobView struct {
	ID         string `json:"id"`
	SweepID    string `json:"sweep_id,omitempty"`
	AgentID    string `json:"agent_id"`
	Deployment string `json:"deployment"`
	// Power is the mode or limit the job runs its device in; zero: as
	// found.
	Power     protocol.PowerSetting `json:"power,omitzero"`
	State     protocol.JobState     `json:"state"`
	Attempt   int                   `json:"attempt"`
	Error     string                `json:"error,omitempty"`
	RunID     string                `json:"run_id,omitempty"`
	Published bool                  `json:"published"`
	// StreamSeq is the job's message in the jobs stream once published.
	StreamSeq uint64 `json:"stream_seq,omitempty"`
	// CancelRequested is true once a user asked to cancel the job.
	CancelRequested bool              `json:"cancel_requested,omitempty"`
	CreatedAt       time.Time         `json:"created_at"`
	UpdatedAt       time.Time         `json:"updated_at,omitzero"`
	Workload        protocol.Workload `json:"workload"`
	History         []JobHistoryEntry `json:"history"`
	// Stalled is true while the job is accepted, starting or running and its
	// agent is offline, or online without it (restarted since the job's
	// last state, or saying it is idle or busy with another job). The job
	// is not failed for it: JetStream delivers it again when the agent
	// returns, or within the ack wait to an agent that lost it.
	Stalled bool `json:"stalled"`
	// StalledSince is the last sign of life of the job or its agent.
	StalledSince time.Time `json:"stalled_since,omitzero"`
	// StallReason says why the job is stalled.
	StallReason string `json:"stall_reason,omitempty"`
}

// SweepStatus counts a sweep's jobs by state.
type SweepStatus struct {
	ID     string                    `json:"id"`
	Jobs   int                       `json:"jobs"`
	States map[protocol.JobState]int `json:"states"`
	// Failed counts jobs that ended failed, cancelled or rejected.
	Failed int `json:"failed"`
	// Done is true when every job is in a terminal state.
	Done bool `json:"done"`
	// Stalled counts jobs whose agent went offline, or came back without
	// them, while it had them (see JobView.Stalled).
	Stalled int `json:"stalled"`
}

// SweepView is a sweep with the state of its jobs.
type SweepView struct {
	protocol.Sweep
	Status  SweepStatus `json:"status"`
	JobList []JobView   `json:"job_states,omitempty"`
}

// LiveSnapshot is what the live page loads before following /api/events.
type LiveSnapshot struct {
	Agents    []AgentView                         `json:"agents"`
	Jobs      []JobView                           `json:"jobs"`
	Progress  []protocol.Progress                 `json:"progress"`
	Telemetry map[string][]protocol.TelemetryTick `json:"telemetry"`
}

// SweepCancel is what cancelling a sweep did to each of its jobs.
type SweepCancel struct {
	ID string `json:"id"`
	// Cancelled lists the jobs marked cancelled here (queued, or with their
	// agent offline); Requested those whose agent was asked to stop them;
	// Ended those that had already ended.
	Cancelled []string `json:"cancelled"`
	Requested []string `json:"requested"`
	Ended     []string `json:"ended"`
}

// How clients sign in to the controller's NATS server, as /api/health
// reports it (nats_auth).
const (
	// NATSAuthNkeys: the embedded server admits only nkey users: the
	// controller with every permission, and each enrolled agent with
	// exactly protocol.AgentPermissionSubjects of its id. The default.
	NATSAuthNkeys = "nkeys"
	// NATSAuthOff: the embedded server admits anyone (Options.Insecure).
	NATSAuthOff = "off"
	// NATSAuthExternal: an external server (Options.NATSURL) whose
	// operator configures its users and their permissions.
	NATSAuthExternal = "external"
)

// AgentCredentials are what enrolling an agent issues: the seed is shown
// once and kept nowhere by the controller.
type AgentCredentials struct {
	AgentID   string `json:"agent_id"`
	PublicKey string `json:"public_key"`
	Seed      string `json:"seed"`
	// NATSURL is the controller's NATS address as the controller sees it;
	// an agent on another host uses the controller's host name instead.
	NATSURL string `json:"nats_url"`
	// CAFingerprint is the pin of the CA behind the NATS server's TLS
	// certificate (the agent's --nats-ca-pin); empty without TLS.
	CAFingerprint string `json:"ca_fingerprint,omitempty"`
}

// AgentRevocation is the answer to revoking an agent's credentials.
type AgentRevocation struct {
	AgentID   string    `json:"agent_id"`
	RevokedAt time.Time `json:"revoked_at"`
}

// Health statuses of /api/health. Both non-ok statuses answer 503, so a
// monitor that only reads the HTTP status still sees them.
const (
	HealthOK = "ok"
	// HealthDegraded: the controller takes in results, but something needs
	// an operator (an agent fell silent, a consumer is being recreated,
	// jobs wait to be published).
	HealthDegraded = "degraded"
	// HealthFailing: results cannot be taken in or kept (NATS or
	// JetStream unavailable, a stream or the store cannot write).
	HealthFailing = "failing"
)

// HealthProblem is one thing /api/health reports broken.
type HealthProblem struct {
	Component string    `json:"component"`
	Error     string    `json:"error"`
	Since     time.Time `json:"since"`
}

// Health is the body of /api/health.
type Health struct {
	Status   string          `json:"status"`
	Problems []HealthProblem `json:"problems"`
	// NATS is "connected" or "disconnected"; JetStream "ok", "unavailable"
	// or "write error"; Ingest "ok" or "rebinding".
	NATS         string   `json:"nats"`
	NATSURL      string   `json:"nats_url"`
	NATSAuth     string   `json:"nats_auth"`
	JetStream    string   `json:"jetstream"`
	Ingest       string   `json:"ingest"`
	IngestError  string   `json:"ingest_error,omitempty"`
	AgentsSilent []string `json:"agents_silent"`
	// AgentsDuplicate are the agents whose id a second process claims,
	// and AgentsNeedUpgrade those of a release this controller cannot
	// serve. With AgentsSilent they are the fleet's matters: Fleet says
	// each in words, and none of them changes Status.
	AgentsDuplicate   []string        `json:"agents_duplicate"`
	AgentsNeedUpgrade []string        `json:"agents_need_upgrade"`
	Fleet             []HealthProblem `json:"fleet"`
	TLS               TLSHealth       `json:"tls"`
	Version           string          `json:"version"`
	EventsDropped     uint64          `json:"events_dropped"`
	Time              time.Time       `json:"time"`
}

// TLSHealth is the "tls" object of /api/health.
type TLSHealth struct {
	HTTP          bool   `json:"http"`
	NATS          bool   `json:"nats"`
	CAFingerprint string `json:"ca_fingerprint,omitempty"`
}

// Event kinds delivered by OnEvent and /api/events.
const (
	EventProgress  = "progress"  // Data: protocol.Progress
	EventTelemetry = "telemetry" // Data: protocol.TelemetryTick
	EventState     = "state"     // Data: protocol.JobStateChange (only changes of a job's current state)
	EventHeartbeat = "heartbeat" // Data: protocol.Heartbeat
	EventAgent     = "agent"     // Data: AgentView (announced, came online, went offline)
	EventResult    = "result"    // Data: ResultEvent
)

// Event is one live happening in the lab.
type Event struct {
	Kind    string    `json:"kind"`
	AgentID string    `json:"agent_id"`
	Time    time.Time `json:"time"`
	Data    any       `json:"data"`
}

// ResultEvent says that a result message was stored.
type ResultEvent struct {
	RunID     string             `json:"run_id"`
	JobID     string             `json:"job_id,omitempty"`
	SweepID   string             `json:"sweep_id,omitempty"`
	AgentID   string             `json:"agent_id"`
	Combo     *protocol.ComboKey `json:"combo,omitempty"`
	Final     bool               `json:"final"`
	Status    string             `json:"status"`
	Simulated bool               `json:"simulated"`
}

// JobHistoryEntry is one state a job's agent reported.
type JobHistoryEntry struct {
	State      protocol.JobState `json:"state"`
	Attempt    int               `json:"attempt"`
	Time       time.Time         `json:"time"`
	ReceivedAt time.Time         `json:"received_at"`
	Error      string            `json:"error,omitempty"`
}

// ImportEntry is one result document to import and where it came from.
type ImportEntry struct {
	Origin string       `json:"origin"`
	Run    protocol.Run `json:"run"`
}

// ImportRequest is the body of POST /api/runs/import.
type ImportRequest struct {
	Runs []ImportEntry `json:"runs"`
}

// Rejection is a message the controller refused to store and why, as
// GET /api/rejected lists it.
type Rejection struct {
	Seq       uint64    `json:"seq"`
	Time      time.Time `json:"time"`
	Subject   string    `json:"subject"`
	StreamSeq uint64    `json:"stream_seq,omitempty"`
	Reason    string    `json:"reason"`
	Bytes     int       `json:"bytes"`
	Excerpt   string    `json:"excerpt,omitempty"`
}
