package controller

import (
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/vlmfleet/vlmfleet/controller/live"
	"github.com/vlmfleet/vlmfleet/internal/testutil"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// The controller answers an agent's request (a heartbeat sent as one) only
// on that agent's own inbox. Agent a1, with its own credentials only, names
// as reply subjects another agent's events, jobs, control subject and
// inbox: none of them receives anything, nothing is stored in either
// stream, each refusal is counted by kind, and a1's request on its own
// inbox is still answered. The same over TLS.
func TestHeartbeatIsAnsweredOnlyInTheSendersInbox(t *testing.T) {
	for _, tc := range []struct {
		name string
		tls  string
	}{{"plain", TLSOff}, {"tls", TLSOn}} {
		t.Run(tc.name, func(t *testing.T) { answersOnlyInTheSendersInbox(t, tc.tls) })
	}
}

func answersOnlyInTheSendersInbox(t *testing.T, tlsMode string) {
	dir := t.TempDir()
	c := startControllerWith(t, Options{DataDir: dir, TLS: tlsMode})
	var secure []nats.Option
	hc := http.DefaultClient
	if tlsMode == TLSOn {
		ca := filepath.Join(dir, TLSDirName, "ca.pem")
		secure = []nats.Option{nats.Secure(clientTLS(t, ca, "", nil))}
		hc = httpsClient(t, ca, "", nil)
	}
	admin, adminJS := testutil.ConnectJS(t, c.NATSURL(), append(secure, testutil.NkeyFile(t, c.NATSSeedFile()))...)
	a1, _ := testutil.ConnectJS(t, c.NATSURL(), append(secure, agentAuth(t, c, "a1")...)...)

	foreign := []string{
		protocol.AgentSubject("a2", protocol.KindState), // a2's events, stored by the stream
		protocol.JobSubject("a2"),                       // a2's job queue
		protocol.ControlSubject("a2"),                   // what a2 obeys: drains, cancels
		protocol.AgentInboxPrefix("a2") + ".stolen",     // a2's own replies
		protocol.AgentInboxPrefix("a1"),                 // the prefix itself, not a subject in it
		protocol.AgentInboxPrefix("a1") + ".*",          // a wildcard in a1's inbox
		protocol.AgentInboxPrefix("a1") + "x.reply",     // agent a1x's inbox
	}
	leaked := make(chan *nats.Msg, 64)
	for _, s := range []string{protocol.AgentSubject("a2", ">"), protocol.JobSubject("a2"), protocol.ControlSubject("a2"),
		protocol.AgentInboxPrefix("a2") + ".>", protocol.AgentInboxPrefix("a1x") + ".>", protocol.AgentInboxPrefix("a1")} {
		if _, err := admin.ChanSubscribe(s, leaked); err != nil {
			t.Fatal(err)
		}
	}
	if err := admin.Flush(); err != nil {
		t.Fatal(err)
	}
	before := refusalsCounted(t, hc, c, RefusalReplySubject)

	hb, _ := json.Marshal(protocol.Heartbeat{Schema: protocol.SchemaVersion, AgentID: "a1", Time: time.Now(), State: protocol.AgentIdle, Seq: 1})
	for _, reply := range foreign {
		if err := a1.PublishRequest(protocol.AgentSubject("a1", protocol.KindHeartbeat), reply, hb); err != nil {
			t.Fatal(err)
		}
	}
	// The controller takes one agent's heartbeats in order and
	// decides on a reply subject before it reads the next, so once
	// a1's own request is answered every foreign one has been
	// decided on; whatever the controller sent to them before that
	// answer reaches the admin before its flush returns.
	reply, err := a1.Request(protocol.AgentSubject("a1", protocol.KindHeartbeat), hb, waitLimit)
	if err != nil {
		t.Fatalf("a1's heartbeat on its own inbox: %v", err)
	}
	if _, d, err := protocol.DecodeControl(reply.Data); err != nil || d == nil || d.Drained {
		t.Fatalf("the answer on a1's own inbox: %s (%v), want a drain saying not drained", reply.Data, err)
	}
	if err := admin.Flush(); err != nil {
		t.Fatal(err)
	}
	for len(leaked) > 0 {
		m := <-leaked
		t.Errorf("a1's heartbeat with reply subject %s made the controller send %q there", m.Subject, m.Data)
	}
	if got := refusalsCounted(t, hc, c, RefusalReplySubject) - before; got != float64(len(foreign)) {
		t.Errorf("%s refusals counted: %v, want %d", RefusalReplySubject, got, len(foreign))
	}
	for stream, filter := range map[string]string{
		protocol.StreamEvents: protocol.AgentSubject("a2", ">"),
		protocol.StreamJobs:   protocol.JobSubject("a2"),
	} {
		if held := streamSubjects(t, adminJS, stream, filter); len(held) != 0 {
			t.Errorf("stream %s holds %v after a1's heartbeats", stream, held)
		}
	}
}

// streamSubjects counts the messages of stream on each subject filter matches.
func streamSubjects(t *testing.T, js jetstream.JetStream, stream, filter string) map[string]uint64 {
	t.Helper()
	s, err := js.Stream(waitCtx(t), stream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(waitCtx(t), jetstream.WithSubjectFilter(filter))
	if err != nil {
		t.Fatal(err)
	}
	return info.State.Subjects
}

// refusalsCounted reads vlmfleet_agent_refusals_total of kind from
// /metrics with hc (loopback reads need no token).
func refusalsCounted(t *testing.T, hc *http.Client, c *Controller, kind string) float64 {
	t.Helper()
	resp, err := hc.Get(c.HTTPURL() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %s %v", resp.Status, err)
	}
	v := metricValue(t, string(body), `vlmfleet_agent_refusals_total{kind="`+kind+`"}`)
	if v < 0 {
		t.Fatalf("/metrics has no vlmfleet_agent_refusals_total{kind=%q}", kind)
	}
	return v
}

// FuzzHeartbeatAnswer feeds the heartbeat path arbitrary subjects, reply
// subjects and bodies: decoding never panics, a heartbeat is taken only
// when it names its subject's agent, and the controller answers only on a
// literal subject in that agent's own inbox; every other reply subject is
// refused (and the refusal recorded without a panic, whatever it holds).
func FuzzHeartbeatAnswer(f *testing.F) {
	hb := `{"schema":1,"agent_id":"a1","time":"2026-01-02T03:04:05Z","state":"idle","seq":1}`
	for _, s := range []struct{ subject, reply, data string }{
		{"vlmfleet.agent.a1.heartbeat", "_INBOX.a1.AbC.1", hb},
		{"vlmfleet.agent.a1.heartbeat", "vlmfleet.agent.a2.state", hb},
		{"vlmfleet.agent.a1.heartbeat", "vlmfleet.control.a2", hb},
		{"vlmfleet.agent.a1.heartbeat", "_INBOX.a1", hb},
		{"vlmfleet.agent.a1.heartbeat", "_INBOX.a1.>", hb},
		{"vlmfleet.agent.a1.heartbeat", "_INBOX.a1x.y", `{"schema":1,"agent_id":"a1x"}`},
		{"vlmfleet.agent.a2.heartbeat", "_INBOX.a2.x y", `{"schema":1,"agent_id":"a2","state":"busy","job_id":"j1"}`},
		{"vlmfleet.agent..heartbeat", "_INBOX..x", `{}`},
		{"vlmfleet.agent.a1.heartbeat", "", `not json`},
	} {
		f.Add(s.subject, s.reply, []byte(s.data))
	}
	c, err := New(Options{DataDir: f.TempDir(), Log: zerolog.Nop()})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { _ = c.Close() })
	f.Fuzz(func(t *testing.T, subject, reply string, data []byte) {
		subjectAgent, _, subjErr := protocol.ParseAgentSubject(subject)
		var hb protocol.Heartbeat
		_, err := live.Decode(subject, data, live.MaxHeartbeatBytes, &hb, func(h *protocol.Heartbeat) (string, int) { return h.AgentID, h.Schema })
		if err == nil && (subjErr != nil || hb.AgentID != subjectAgent) {
			t.Fatalf("heartbeat %q on %q taken as agent %q's", data, subject, hb.AgentID)
		}
		agent, to, ok := c.replyTo(&nats.Msg{Subject: subject, Reply: reply, Data: data})
		if !ok {
			return
		}
		inbox := protocol.AgentInboxPrefix(subjectAgent) + "."
		if subjErr != nil || agent != subjectAgent || to != reply || !strings.HasPrefix(reply, inbox) {
			t.Fatalf("a request on %q with reply %q answered as agent %q's on %q", subject, reply, agent, to)
		}
		for _, tok := range strings.Split(strings.TrimPrefix(reply, inbox), ".") {
			if tok == "" || strings.ContainsAny(tok, "*> \t\r\n\x00") {
				t.Fatalf("reply %q (token %q) answered: not a literal subject", reply, tok)
			}
		}
	})
}

// A heartbeat request the controller refuses (too large, or naming another
// agent) is not answered, even on the sender's own inbox: the answer makes
// the agent's job consumer, which only a heartbeat taken in may cause.
func TestRefusedHeartbeatGoesUnanswered(t *testing.T) {
	c := startControllerWith(t, Options{DataDir: t.TempDir()})
	a1, _ := testutil.ConnectJS(t, c.NATSURL(), agentAuth(t, c, "a1")...)
	good, _ := json.Marshal(protocol.Heartbeat{Schema: protocol.SchemaVersion, AgentID: "a1", Time: time.Now(), State: protocol.AgentIdle, Seq: 1})
	big, _ := json.Marshal(protocol.Heartbeat{Schema: protocol.SchemaVersion, AgentID: "a1", Time: time.Now(), State: protocol.AgentIdle,
		JobID: strings.Repeat("j", live.MaxHeartbeatBytes)})
	other, _ := json.Marshal(protocol.Heartbeat{Schema: protocol.SchemaVersion, AgentID: "a2", Time: time.Now(), State: protocol.AgentIdle})
	subject := protocol.AgentSubject("a1", protocol.KindHeartbeat)
	before := refusalsCounted(t, http.DefaultClient, c, RefusalHeartbeat)
	for name, data := range map[string][]byte{"oversized": big, "another agent's": other} {
		inbox := a1.NewRespInbox()
		sub, err := a1.SubscribeSync(inbox)
		if err != nil {
			t.Fatal(err)
		}
		if err := a1.PublishRequest(subject, inbox, data); err != nil {
			t.Fatal(err)
		}
		// The controller takes a1's heartbeats in order and answers a
		// request before the next is read, so once a good one is answered
		// the refused one was decided on.
		if _, err := a1.Request(subject, good, waitLimit); err != nil {
			t.Fatalf("a1's good heartbeat: %v", err)
		}
		if m, err := sub.NextMsg(200 * time.Millisecond); err == nil {
			t.Errorf("the %s heartbeat was answered: %s", name, m.Data)
		}
	}
	if got := refusalsCounted(t, http.DefaultClient, c, RefusalHeartbeat) - before; got != 2 {
		t.Errorf("heartbeat refusals counted: %v, want 2", got)
	}
}
