package controller

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	bolterrors "go.etcd.io/bbolt/errors"

	"github.com/vlmfleet/vlmfleet/controller/store"
	"github.com/vlmfleet/vlmfleet/protocol"
)

func TestSettleRetriesOnlyTransientErrors(t *testing.T) {
	transient := errors.New("store: result for run r1: write: no space left on device")
	cases := []struct {
		name      string
		err       error
		delivered uint64
		want      action
		reason    string
	}{
		{"stored", nil, 1, actAck, ""},
		{"refused by the store", &store.RejectError{Reason: "run r1 belongs to agent a2"}, 1, actReject, "belongs to agent a2"},
		{"refused by bbolt", fmt.Errorf("store: agent a1: %w", bolterrors.ErrValueTooLarge), 1, actReject, "value too large"},
		{"transient, first delivery", transient, 1, actRetry, ""},
		{"transient, next to last", transient, MaxDeliveries - 1, actRetry, ""},
		{"transient, last delivery", transient, MaxDeliveries, actReject, "no space left"},
	}
	for _, tc := range cases {
		d := settle(tc.err, tc.delivered)
		if d.action != tc.want || !strings.Contains(d.reason, tc.reason) {
			t.Errorf("%s: got %+v, want action %d with reason containing %q", tc.name, d, tc.want, tc.reason)
		}
		if d.action == actRetry && d.delay <= 0 {
			t.Errorf("%s: retry without delay", tc.name)
		}
	}
}

func TestRedeliveryWaitsGrowToHalfAMinute(t *testing.T) {
	if d := nakDelay(1); d != 500*time.Millisecond {
		t.Errorf("first redelivery in %v, want 500ms", d)
	}
	if a, b := nakDelay(2), nakDelay(3); a != time.Second || b != 2*time.Second {
		t.Errorf("second and third redelivery in %v and %v, want 1s and 2s", a, b)
	}
	if d := nakDelay(MaxDeliveries); d != 30*time.Second {
		t.Errorf("last redelivery in %v, want 30s", d)
	}
}

func TestConsumerGivesUpAfterFiniteDeliveries(t *testing.T) {
	cfg := EventsConsumerConfig()
	if cfg.MaxDeliver != MaxDeliveries || cfg.MaxDeliver <= 0 {
		t.Fatalf("MaxDeliver %d, want %d: a message that never stores must not hold an ack slot for ever", cfg.MaxDeliver, MaxDeliveries)
	}
}

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
	hello, err := json.Marshal(protocol.AgentHello{Schema: 1, AgentID: "a1", Hostname: "h", StartedAt: time.Now().UTC()})
	if err != nil {
		t.Fatal(err)
	}
	first := &recordingMsg{subject: protocol.AgentSubject("a1", protocol.KindHello), data: hello, delivered: 1}
	c.handleDurable(first)
	if len(first.settled) != 1 || first.settled[0] != "nak" {
		t.Errorf("first delivery settled %q, want a nak", first.settled)
	}
	last := &recordingMsg{subject: first.subject, data: hello, delivered: MaxDeliveries}
	c.handleDurable(last)
	if len(last.settled) != 1 || !strings.HasPrefix(last.settled[0], "term: storing failed on all 50 deliveries") {
		t.Errorf("last delivery settled %q, want a term naming the deliveries", last.settled)
	}
}
