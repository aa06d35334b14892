package protocol

import (
	"fmt"
	"net/url"
	"strings"
)

// Subjects. Every subject an agent publishes on or consumes from carries the
// agent id as its third token, so a NATS account can confine each agent to
// "vlmfleet.agent.<id>.>", "vlmfleet.jobs.<id>" and "vlmfleet.control.<id>"
// (see docs/architecture.md).
const (
	// SubjectPrefix is the root of every vlmfleet subject.
	SubjectPrefix = "vlmfleet"

	// StreamJobs holds jobs addressed to agents (subjects vlmfleet.jobs.<agent>).
	StreamJobs = "VLMFLEET_JOBS"
	// StreamEvents holds what agents report and must not be lost: their
	// announcements, job state changes and results (vlmfleet.agent.<agent>.{hello,state,result}).
	StreamEvents = "VLMFLEET_EVENTS"

	// KindHello, KindState and KindResult are the durable event kinds (JetStream).
	KindHello  = "hello"
	KindState  = "state"
	KindResult = "result"
	// KindHeartbeat, KindProgress and KindTelemetry are live-only (core NATS).
	KindHeartbeat = "heartbeat"
	KindProgress  = "progress"
	KindTelemetry = "telemetry"
)

// ValidateAgentID checks that id can be used as one NATS subject token and as
// a JetStream consumer name.
func ValidateAgentID(id string) error {
	if !plainName(id, 64, "_-") {
		return fmt.Errorf("agent id %q: want 1-64 characters of letters, digits, '-' or '_', starting with a letter or digit", id)
	}
	return nil
}

// ValidateID checks a job, run or sweep id: it becomes part of store keys and
// message ids, so it is short and plain.
func ValidateID(what, id string) error {
	if !plainName(id, 200, "._:-") {
		return fmt.Errorf("%s %.40q: want 1-200 characters of letters, digits, '.', ':', '-' or '_', starting with a letter or digit", what, id)
	}
	return nil
}

// plainName reports whether s has 1 to most ASCII letters, digits and bytes
// of also, starting with a letter or digit. Every message is checked so
// several times: a loop costs a small part of what a regexp did.
func plainName(s string, most int, also string) bool {
	if len(s) == 0 || len(s) > most {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case i > 0 && strings.IndexByte(also, c) >= 0:
		default:
			return false
		}
	}
	return true
}

// RedactURL hides the passwords of a NATS or HTTP URL for logs and
// errors. A NATS URL may be a comma-separated list of a cluster's nodes,
// each with its credentials: every one is redacted. A URL that does not
// parse as one with a user keeps nothing of what stands before its '@'.
func RedactURL(raw string) string {
	if !strings.Contains(raw, ",") {
		return redactOne(raw)
	}
	parts := strings.Split(raw, ",")
	for i, p := range parts {
		parts[i] = redactOne(strings.TrimSpace(p))
	}
	return strings.Join(parts, ",")
}

func redactOne(raw string) string {
	if u, err := url.Parse(raw); err == nil && u.User != nil {
		return u.Redacted()
	}
	// Unparsable, or without a scheme (nats.go reads "user:pw@host:port"
	// as a nats:// URL, url.Parse as an opaque one).
	at := strings.LastIndex(raw, "@")
	if at < 0 {
		return raw
	}
	scheme, _, ok := strings.Cut(raw[:at], "://")
	if !ok {
		return "xxxxx" + raw[at:]
	}
	return scheme + "://xxxxx" + raw[at:]
}

// JobSubject is where the controller publishes jobs for one agent.
func JobSubject(agentID string) string { return SubjectPrefix + ".jobs." + agentID }

// JobSubjectAll matches the jobs of every agent (the jobs stream's subject).
const JobSubjectAll = SubjectPrefix + ".jobs.*"

// AgentSubject is where agent agentID publishes events of the given kind.
func AgentSubject(agentID, kind string) string {
	return SubjectPrefix + ".agent." + agentID + "." + kind
}

// ParseAgentSubject splits an agent's subject (AgentSubject) into the
// agent's id and the kind of message, or says why it is not one.
func ParseAgentSubject(subject string) (agentID, kind string, err error) {
	t := strings.Split(subject, ".")
	if len(t) != 4 || t[0] != SubjectPrefix || t[1] != "agent" {
		return "", "", fmt.Errorf("subject %q is not %s.agent.<id>.<kind>", subject, SubjectPrefix)
	}
	if err := ValidateAgentID(t[2]); err != nil {
		return "", "", fmt.Errorf("subject %q: %w", subject, err)
	}
	return t[2], t[3], nil
}

// AgentSubjectAll matches events of one kind from every agent ("*" for the agent token).
func AgentSubjectAll(kind string) string { return SubjectPrefix + ".agent.*." + kind }

// AgentPermissionSubjects lists the subjects an agent may publish to and
// subscribe on, for operators writing NATS authorization blocks.
//
// An agent may look up and pull from its job consumer but not create or
// change it: the controller makes it (see MaxJobDeliveries). A consumer's
// configuration names where it delivers, and the server checks that
// subject against nobody's permissions, so an agent allowed to create its
// consumer could have its jobs pushed onto any subject of the account.
func AgentPermissionSubjects(agentID string) (publish, subscribe []string) {
	publish = []string{
		SubjectPrefix + ".agent." + agentID + ".>",
		"$JS.API.CONSUMER.INFO." + StreamJobs + "." + JobConsumerName(agentID),
		"$JS.API.CONSUMER.MSG.NEXT." + StreamJobs + "." + JobConsumerName(agentID),
		"$JS.ACK." + StreamJobs + "." + JobConsumerName(agentID) + ".>",
		"$JS.API.STREAM.INFO." + StreamJobs,
		"$JS.API.INFO",
	}
	subscribe = []string{AgentInboxPrefix(agentID) + ".>", ControlSubject(agentID)}
	return publish, subscribe
}

// ControlSubject is where the controller sends one agent its commands (a
// job's cancellation) on core NATS: an agent that is offline misses them,
// and the controller then acts for it.
func ControlSubject(agentID string) string { return SubjectPrefix + ".control." + agentID }

// AgentInboxPrefix is the prefix of an agent's reply subjects: an inbox of
// its own, so that its permissions can keep it from reading other clients'
// replies (the jobs delivered to other agents, the controller's events).
func AgentInboxPrefix(agentID string) string { return "_INBOX." + agentID }

// CheckAgentReply checks that reply, the reply subject of a request agent
// agentID sent, is a subject in that agent's own inbox: AgentInboxPrefix,
// a '.', and one or more tokens without wildcards. The server checks a
// reply subject against no permission, so whoever answers an agent with
// more rights than the agent's (the controller) must check it: answering
// on a subject the agent merely named would publish there for it.
func CheckAgentReply(agentID, reply string) error {
	rest, ok := strings.CutPrefix(reply, AgentInboxPrefix(agentID)+".")
	if !ok {
		return fmt.Errorf("reply subject %.80q is not in agent %s's inbox %s.>", reply, agentID, AgentInboxPrefix(agentID))
	}
	for tok := range strings.SplitSeq(rest, ".") {
		if tok == "" || tok == "*" || tok == ">" || strings.ContainsFunc(tok, notSubjectRune) {
			return fmt.Errorf("reply subject %.80q: token %.40q is empty, a wildcard or holds a space or control character", reply, tok)
		}
	}
	return nil
}

// notSubjectRune reports the runes no literal subject token holds:
// whitespace, which ends a subject in the protocol, and control bytes.
func notSubjectRune(r rune) bool { return r <= ' ' || r == 0x7f }

// MaxJobDeliveries is how often JetStream delivers one job: a job that
// takes its agent down every time (an engine that brings the host to its
// knees) is not retried forever. The controller makes each agent's job
// consumer with it.
const MaxJobDeliveries = 5

// JobConsumerName is the durable consumer through which one agent receives its jobs.
func JobConsumerName(agentID string) string { return "agent-" + agentID }

// Message ids for JetStream deduplication. A retry of the same publish carries
// the same id, so the stream stores it once; the controller's store is keyed by
// the same identities, so a redelivery is also written once.

// JobMsgID is the message id of a job.
func JobMsgID(jobID string) string { return "job." + jobID }

// StateMsgID is the message id of one job state change.
func StateMsgID(jobID string, state JobState, attempt int) string {
	return fmt.Sprintf("state.%s.%s.%d", jobID, state, attempt)
}

// ResultMsgID is the message id of one result message.
func ResultMsgID(runID string, key string) string { return "result." + runID + "." + key }

// HelloMsgID is the message id of an agent announcement; one per agent start.
func HelloMsgID(agentID string, startedUnixNano int64) string {
	return fmt.Sprintf("hello.%s.%d", agentID, startedUnixNano)
}
