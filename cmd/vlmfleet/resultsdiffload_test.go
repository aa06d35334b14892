package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/vlmfleet/vlmfleet/explorer"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// results diff says each back-to-back level's load beside its figures,
// and a level measured sustained in B only, twice as slow as A's round,
// is listed as B's alone, not judged worse.
func TestResultsDiffSaysTheLoad(t *testing.T) {
	a := recordedRun("a", 0, 1.0)
	b := recordedRun("b", 1, 1.0)
	sustained := b.Combinations[1]
	sustained.Load, sustained.Rounds, sustained.WindowSec = protocol.LoadSustained, 3, 12
	sustained.Requests = slices.Clone(sustained.Requests)
	for i := range sustained.Requests {
		sustained.Requests[i].TTFT *= 2
	}
	b.Combinations = append(b.Combinations, sustained)
	cmp, err := explorer.Compare(&a, &b)
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	printComparison(&out, cmp)
	text := out.String()
	if !strings.Contains(text, "B against A: same") {
		t.Errorf("a sustained level was judged against a round:\n%s", text)
	}
	name := "720p 1 img 2 cam"
	if !strings.Contains(text, "measured in B only: "+name+" sustained") {
		t.Errorf("B's sustained level is not listed as B's alone:\n%s", text)
	}
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, name+" ") && !strings.Contains(line, "one round, as published") {
			t.Errorf("line %q does not say its load", line)
		}
	}
}
