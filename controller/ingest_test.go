package controller

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/vlmfleet/vlmfleet/controller/ingest"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// recordingMsg is a delivered JetStream message whose settlement the test
// reads back; methods the controller must not call are left nil.
type recordingMsg struct {
	jetstream.Msg
	subject   string
	data      []byte
	delivered uint64
	settled   []string
}

func (m *recordingMsg) Subject() string { return m.subject }
func (m *recordingMsg) Data() []byte    { return m.data }
func (m *recordingMsg) Metadata() (*jetstream.MsgMetadata, error) {
	return &jetstream.MsgMetadata{Sequence: jetstream.SequencePair{Stream: 7}, NumDelivered: m.delivered, Timestamp: time.Now()}, nil
}
func (m *recordingMsg) Ack() error { m.settled = append(m.settled, "ack"); return nil }
func (m *recordingMsg) NakWithDelay(d time.Duration) error {
	m.settled = append(m.settled, "nak")
	return nil
}
func (m *recordingMsg) TermWithReason(r string) error {
	m.settled = append(m.settled, "term: "+r)
	return nil
}

// A store that keeps failing is retried with Nak, but the last delivery
// ends the message instead of leaving it to JetStream's silent give-up.
func TestFailingStoreIsRetriedUntilTheLastDelivery(t *testing.T) {
	c := startController(t, t.TempDir())
	if err := c.store.Close(); err != nil { // every write now fails
		t.Fatal(err)
	}
	hello, err := json.Marshal(protocol.AgentHello{Schema: 1, Level: protocol.AgentLevel, AgentID: "a1", Hostname: "h", StartedAt: time.Now().UTC()})
	if err != nil {
		t.Fatal(err)
	}
	first := &recordingMsg{subject: protocol.AgentSubject("a1", protocol.KindHello), data: hello, delivered: 1}
	c.ingester.Handle(first)
	if len(first.settled) != 1 || first.settled[0] != "nak" {
		t.Errorf("first delivery settled %q, want a nak", first.settled)
	}
	last := &recordingMsg{subject: first.subject, data: hello, delivered: ingest.MaxDeliveries}
	c.ingester.Handle(last)
	if len(last.settled) != 1 || !strings.HasPrefix(last.settled[0], "term: storing failed on all 50 deliveries") {
		t.Errorf("last delivery settled %q, want a term naming the deliveries", last.settled)
	}
}
