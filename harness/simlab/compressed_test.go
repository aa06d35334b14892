package simlab_test

import (
	"strings"
	"testing"
	"time"

	"github.com/vlmfleet/vlmfleet/harness/simlab"
	"github.com/vlmfleet/vlmfleet/internal/testutil"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// A real agent learns from its first heartbeat's answer that the
// controller takes compressed results, and sends them so: in the events
// stream every result message is compressed and every other one JSON, and
// the stored run has every combination with its series and records.
func TestResultsTravelCompressed(t *testing.T) {
	l := newLab(t, testContext(t, 90*time.Second), simlab.Options{})
	ctrl := l.Controller()
	l.startAgent(agx("packed"))
	job := l.submit("packed", tinyWorkload(3))
	l.waitState(job, protocol.JobCompleted, 1)
	_, js := testutil.ConnectJS(t, ctrl.NATSURL(), testutil.NkeyFile(t, ctrl.NATSSeedFile()))
	stream, err := js.Stream(l.ctx, protocol.StreamEvents)
	if err != nil {
		t.Fatal(err)
	}
	results, others := 0, 0
	for seq := uint64(1); seq <= stream.CachedInfo().State.LastSeq; seq++ {
		msg, err := stream.GetMsg(l.ctx, seq)
		if err != nil {
			t.Fatalf("message %d: %v", seq, err)
		}
		kind := msg.Subject[strings.LastIndexByte(msg.Subject, '.')+1:]
		switch compressed := protocol.IsCompressed(msg.Data); {
		case kind == protocol.KindResult && compressed:
			results++
		case kind != protocol.KindResult && !compressed:
			others++
		default:
			t.Errorf("%s message %d: compressed %v", kind, seq, compressed)
		}
	}
	if others < 2 {
		t.Errorf("%d other messages in the stream, want its hello and its job's states", others)
	}
	if results < 2 {
		t.Errorf("%d result messages in the stream, want a combination's and the final one", results)
	}
	final, err := ctrl.Job(l.ctx, job)
	if err != nil {
		t.Fatal(err)
	}
	run := fetchRun(t, ctrl.HTTPURL(), final.RunID)
	if len(run.Combinations) != 1 || len(run.Combinations[0].Requests) != 3 || len(run.Combinations[0].TelemetrySeries) == 0 {
		t.Errorf("stored run: %+v", run.Combinations)
	}
}
