package jobs

import (
	"strings"
	"testing"

	"github.com/vlmfleet/vlmfleet/protocol"
)

func TestDecodeMaxDeliveries(t *testing.T) {
	good := `{"type":"io.nats.jetstream.advisory.v1.max_deliver","id":"i","timestamp":"2026-11-29T16:29:15.58Z","stream":"VLMFLEET_JOBS","consumer":"agent-orin-1","stream_seq":7,"deliveries":5,"domain":""}`
	adv, agent, err := decodeMaxDeliveries([]byte(good))
	if err != nil || agent != "orin-1" || adv.StreamSeq != 7 || adv.Deliveries != 5 || adv.Time.IsZero() {
		t.Fatalf("good advisory: %+v %q %v", adv, agent, err)
	}
	for body, want := range map[string]string{
		strings.Replace(good, "max_deliver", "nak", 1):               "type",
		strings.Replace(good, "VLMFLEET_JOBS", "OTHER", 1):           `stream "OTHER"`,
		strings.Replace(good, "agent-orin-1", "agent-", 1):           "consumer",
		strings.Replace(good, "agent-orin-1", "agent-a b", 1):        "consumer",
		strings.Replace(good, `"stream_seq":7`, `"x":1`, 1):          "stream_seq",
		strings.Replace(good, `"deliveries":5`, `"deliveries":0`, 1): "deliveries",
		`{"stream_seq":"7"}`: "line 1 column",
		``:                   "empty",
	} {
		if _, _, err := decodeMaxDeliveries([]byte(body)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v, want an error about %q", body, err, want)
		}
	}
}

func FuzzDecodeMaxDeliveries(f *testing.F) {
	f.Add([]byte(`{"type":"io.nats.jetstream.advisory.v1.max_deliver","stream":"VLMFLEET_JOBS","consumer":"agent-a","stream_seq":1,"deliveries":5}`))
	f.Add([]byte(`{"type":"io.nats.jetstream.advisory.v1.max_deliver","stream":"VLMFLEET_JOBS","consumer":"agent-","stream_seq":1,"deliveries":5}`))
	f.Add([]byte(`{"stream_seq":-1}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		adv, agent, err := decodeMaxDeliveries(data)
		if err != nil {
			return
		}
		if protocol.JobConsumerName(agent) != adv.Consumer || protocol.ValidateAgentID(agent) != nil || adv.StreamSeq == 0 || adv.Deliveries == 0 {
			t.Fatalf("accepted %+v (agent %q)", adv, agent)
		}
	})
}
