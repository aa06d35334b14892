package agent

import (
	"bytes"
	"testing"

	"github.com/rs/zerolog"

	"github.com/vlmfleet/vlmfleet/protocol"
)

// An agent sends its results compressed only once its controller said it
// takes them so, and sends nothing else compressed: a controller from
// before (which says nothing of encodings) gets them as JSON.
func TestResultsCompressedOnlyForAControllerThatTakesThem(t *testing.T) {
	a := &Agent{log: zerolog.Nop()}
	result := protocol.AgentSubject("a1", protocol.KindResult)
	state := protocol.AgentSubject("a1", protocol.KindState)
	js := []byte(`{"schema":1,"agent_id":"a1"}`)
	if got := a.wire.encode(result, js); !bytes.Equal(got, js) {
		t.Errorf("before any answer, a result went as %q", got)
	}
	a.agree(&protocol.Drain{Schema: 1})
	if got := a.wire.encode(result, js); !bytes.Equal(got, js) {
		t.Errorf("to a controller that names no encoding, a result went as %q", got)
	}
	a.agree(&protocol.Drain{Schema: 1, Encodings: []string{"zstd", protocol.EncodingS2}})
	got := a.wire.encode(result, js)
	if !protocol.IsCompressed(got) {
		t.Fatalf("to a controller that takes s2, a result went as %q", got)
	}
	if back, err := protocol.Uncompress(got); err != nil || !bytes.Equal(back, js) {
		t.Errorf("the compressed result reads back as %q (%v)", back, err)
	}
	if got := a.wire.encode(state, js); !bytes.Equal(got, js) {
		t.Errorf("a state went as %q; only results are compressed", got)
	}
}
