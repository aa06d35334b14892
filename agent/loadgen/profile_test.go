package loadgen

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vlmfleet/vlmfleet/protocol"
)

func measureProfile(t *testing.T, f *profileFake, spec ProfileSpec) []protocol.Combination {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cs, err := MeasureProfile(ctx, f.target(), spec, profileImages{}, Hooks{})
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// The text is sized so that the server's own count of its tokens is the
// ISL within 1 %, with no tokenizer: the fake counts about 1.3 tokens a
// word, and the probes learn it and the image's cost.
func TestProfileISLWithinOnePercentOfTheServersCount(t *testing.T) {
	for _, isl := range []int{200, 1000, 5000} {
		f := newProfileFake(t, 4, time.Millisecond, time.Millisecond)
		cs := measureProfile(t, f, profileSpec(isl, 4, 3, 1))
		texts := f.texts()
		measured := texts[len(texts)-3:] // after the probes
		for _, got := range measured {
			if math.Abs(float64(got-isl)) > 0.01*float64(isl) {
				t.Errorf("ISL %d: the server counted %d text tokens, more than 1 %% off", isl, got)
			}
		}
		pl := cs[0].Profile
		if want := fakeTemplateTokens + fakeImageTokens; math.Abs(float64(pl.ImageTokens-want)) > 1 {
			t.Errorf("ISL %d: image tokens %d, want %d±1", isl, pl.ImageTokens, want)
		}
		for _, rec := range cs[0].Requests {
			if rec.ISL != isl || rec.PromptTokens != measured[0]+fakeTemplateTokens+fakeImageTokens {
				t.Errorf("ISL %d: record ISL %d, prompt tokens %d", isl, rec.ISL, rec.PromptTokens)
			}
		}
		if pl.TextTokensEstimated {
			t.Errorf("ISL %d: text tokens marked estimated, but the server reports usage", isl)
		}
	}
}

// Requests of one level carry texts that share no prefix: the same words
// in an order of their own.
func TestProfileTextsShareNoPrefix(t *testing.T) {
	f := newProfileFake(t, 4, time.Millisecond, time.Millisecond)
	measureProfile(t, f, profileSpec(100, 2, 4, 2))
	reqs := f.requests()
	a, b := reqs[len(reqs)-1].Messages[0].Content[0].Text, reqs[len(reqs)-2].Messages[0].Content[0].Text
	if strings.Fields(a)[0] == strings.Fields(b)[0] && strings.Fields(a)[1] == strings.Fields(b)[1] {
		t.Errorf("two requests' texts start alike: %.40q and %.40q", a, b)
	}
	if fakeWordTokens(a) != fakeWordTokens(b) {
		t.Errorf("two requests' texts count %d and %d tokens", fakeWordTokens(a), fakeWordTokens(b))
	}
}

// A server that reports no usage: a word is a token, said so.
func TestProfileWithoutUsageEstimatesTheText(t *testing.T) {
	f := newProfileFake(t, 4, time.Millisecond, time.Millisecond, func(f *profileFake) { f.noUsage = true })
	cs := measureProfile(t, f, profileSpec(300, 4, 2, 1))
	pl := cs[0].Profile
	if !pl.TextTokensEstimated || pl.ImageTokens != 0 {
		t.Errorf("estimated %v, image tokens %d; want estimated, 0", pl.TextTokensEstimated, pl.ImageTokens)
	}
	if got := len(strings.Fields(f.requests()[len(f.requests())-1].Messages[0].Content[0].Text)); got != 300 {
		t.Errorf("text of %d words, want 300", got)
	}
}

// OSL is held where the engine forces it, and flagged where the answer
// stops early (an engine with no switch, Ollama).
func TestProfileOSLForcedOrFlagged(t *testing.T) {
	f := newProfileFake(t, 4, time.Millisecond, time.Millisecond)
	spec := profileSpec(50, 12, 3, 1)
	spec.ForcedLength = vllmForced
	pl := measureProfile(t, f, spec)[0].Profile
	if !pl.OSLHeld || pl.OSLShort != 0 || pl.OSLMean != 12 || !slices.Equal(pl.ForcedBy, []string{"ignore_eos", "min_tokens"}) {
		t.Errorf("forced: held %v, short %d, mean %.1f, forced by %v; want held, 0, 12, [ignore_eos min_tokens]",
			pl.OSLHeld, pl.OSLShort, pl.OSLMean, pl.ForcedBy)
	}
	spec.ForcedLength = nil
	pl = measureProfile(t, f, spec)[0].Profile
	if pl.OSLHeld || pl.OSLShort != 3 || pl.OSLMean != 5 || len(pl.ForcedBy) != 0 {
		t.Errorf("not forced: held %v, short %d, mean %.1f, forced by %v; want not held, 3, 5, none",
			pl.OSLHeld, pl.OSLShort, pl.OSLMean, pl.ForcedBy)
	}
	for _, req := range f.requests() {
		if req.MaxTokens > 1 && !req.StreamOptions.IncludeUsage {
			t.Fatal("a streamed request without stream_options.include_usage")
		}
	}
}

// TTFT, ITL, latency and throughput follow genai-perf's definitions.
func TestProfileFiguresByTheDefinitions(t *testing.T) {
	const ttft, perToken, osl = 60 * time.Millisecond, 8 * time.Millisecond, 11
	f := newProfileFake(t, 4, ttft, perToken)
	spec := profileSpec(50, osl, 5, 1)
	spec.ForcedLength = vllmForced
	c := measureProfile(t, f, spec)[0]
	pl := c.Profile
	// A loaded machine only ever adds time: the bounds above are wide.
	within(t, "TTFT ms", *pl.TTFTMs, 60, 60+4*tolMS)
	within(t, "ITL ms", *pl.ITLMs, 8, 8+tolMS)
	within(t, "latency ms", pl.RequestLatencyMs, 60+80, 60+80+8*tolMS)
	// Latency is TTFT + ITL × (OSL - 1) by the definition of ITL.
	within(t, "TTFT + ITL×(OSL-1)", *pl.TTFTMs+*pl.ITLMs*(osl-1), pl.RequestLatencyMs-0.01, pl.RequestLatencyMs+0.01)
	first, last := math.Inf(1), 0.0
	for _, r := range c.Requests {
		first, last = math.Min(first, r.Start), math.Max(last, r.Start+r.E2E)
	}
	want := float64(c.Completed) / (last - first)
	within(t, "request throughput", pl.RequestThroughput, want*0.999, want*1.001)
	within(t, "output tokens/s", pl.OutputTokensPerSec, want*osl*0.999, want*osl*1.001)
	// At concurrency 1 the requests follow each other: no more than one
	// a latency.
	within(t, "request throughput", pl.RequestThroughput, 1000/(pl.RequestLatencyMs+tolMS*4), 1000/pl.RequestLatencyMs)
	if c.TTFT.N != 5 || c.E2E.N != 5 {
		t.Errorf("the combination's own stats have %d TTFTs and %d E2Es, want 5", c.TTFT.N, c.E2E.N)
	}
}

// A profile without streaming has latency and throughput only.
func TestProfileNotStreamedHasNoTTFTOrITL(t *testing.T) {
	f := newProfileFake(t, 4, 30*time.Millisecond, time.Millisecond)
	spec := profileSpec(0, 6, 3, 1)
	spec.Workload.NoStream = true
	spec.Workload.ExtraBody = json.RawMessage(`{"tools":[{"type":"function","function":{"name":"parse"}}]}`)
	c := measureProfile(t, f, spec)[0]
	pl := c.Profile
	if pl.TTFTMs != nil || pl.ITLMs != nil || pl.Stream {
		t.Errorf("not streamed: TTFT %v, ITL %v, stream %v; want nil, nil, false", pl.TTFTMs, pl.ITLMs, pl.Stream)
	}
	if c.Completed != 3 || pl.RequestLatencyMs < 30 || pl.RequestThroughput <= 0 || pl.OSLMean != 5 {
		t.Errorf("completed %d, latency %.1f ms, throughput %.2f/s, OSL mean %.1f", c.Completed, pl.RequestLatencyMs,
			pl.RequestThroughput, pl.OSLMean)
	}
	for _, req := range f.requests() {
		if req.Stream || req.StreamOptions.IncludeUsage || string(req.Tools) == "" {
			t.Fatalf("request stream %v, include_usage %v, tools %s", req.Stream, req.StreamOptions.IncludeUsage, req.Tools)
		}
		if got := req.Messages[0].Content[0].Text; got != spec.Prompt {
			t.Fatalf("ISL 0 sent %q, want the prompt", got)
		}
	}
}

// A server that refuses min_tokens with a 400 is asked again without the
// switches, once a run, and the level says so.
func TestProfileRefusedSwitchIsDroppedAndRecorded(t *testing.T) {
	f := newProfileFake(t, 4, time.Millisecond, time.Millisecond, func(f *profileFake) { f.refuseMinTokens = true })
	spec := profileSpec(50, 8, 4, 1)
	spec.ForcedLength = vllmForced
	var warned []string
	spec.Warn = func(msg string) { warned = append(warned, msg) }
	c := measureProfile(t, f, spec)[0]
	pl := c.Profile
	if c.Completed != 4 || c.Failed != 0 {
		t.Errorf("completed %d, failed %d; want 4, 0", c.Completed, c.Failed)
	}
	if !slices.Equal(pl.SwitchesDropped, []string{"ignore_eos", "min_tokens"}) || len(pl.ForcedBy) != 0 {
		t.Errorf("dropped %v, forced by %v; want [ignore_eos min_tokens], none", pl.SwitchesDropped, pl.ForcedBy)
	}
	f.mu.Lock()
	refused := f.refused
	f.mu.Unlock()
	if refused != 1 || len(warned) != 1 || !strings.Contains(warned[0], "min_tokens") {
		t.Errorf("%d refusals and warnings %q; want one of each", refused, warned)
	}
}

// Extra body may not set what vlmfleet owns.
func TestProfileExtraBodyMayNotSetOwnedFields(t *testing.T) {
	f := newProfileFake(t, 4, time.Millisecond, time.Millisecond)
	spec := profileSpec(0, 4, 1, 1)
	spec.Workload.ExtraBody = json.RawMessage(`{"min_tokens":3}`)
	_, err := MeasureProfile(context.Background(), f.target(), spec, profileImages{}, Hooks{})
	if err == nil || !strings.Contains(err.Error(), `"min_tokens"`) {
		t.Errorf("err = %v, want one naming min_tokens", err)
	}
	if len(f.requests()) != 0 {
		t.Errorf("%d requests sent, want none", len(f.requests()))
	}
}

// With the automatic rule, concurrency doubles until throughput stops
// growing, and the max-throughput point is where a server that serves
// four at once saturates.
func TestProfileAutoFindsTheSaturationPoint(t *testing.T) {
	// A request takes 550 ms, and concurrency 4 sends one round, where 8
	// sends two the server queues: the client's own moments between
	// answers, on a loaded machine, stay far below the rule's 5 %.
	f := newProfileFake(t, 4, 500*time.Millisecond, 5*time.Millisecond)
	spec := profileSpec(20, 11, 4)
	spec.ForcedLength = vllmForced
	spec.Workload.AutoCeiling = 64
	var series [][]protocol.Combination
	h := Hooks{SeriesDone: func(levels []protocol.Combination) error {
		series = append(series, levels)
		return nil
	}}
	cs, err := MeasureProfile(context.Background(), f.target(), spec, profileImages{}, h)
	if err != nil {
		t.Fatal(err)
	}
	var levels []int
	var rates []float64
	marked := 0
	for _, c := range cs {
		levels = append(levels, c.Cameras)
		rates = append(rates, c.Profile.RequestThroughput)
		if c.Profile.MaxThroughput {
			marked = c.Cameras
		}
	}
	// The server saturates at 4. A loaded machine staggers the starts of
	// one round at 4 (a level's throughput runs from its first start),
	// while at 8 the server's queue hides the stagger: 8 may then look 5 %
	// better than 4 and 16 be measured too, so the mark may be 8, never
	// below the saturation nor at a level the rule should not reach.
	ideal := 4 / 0.55
	if (!slices.Equal(levels, []int{1, 2, 4, 8}) && !slices.Equal(levels, []int{1, 2, 4, 8, 16})) ||
		(marked != 4 && marked != 8) {
		t.Errorf("levels %v (requests/s %.2f) marked %d; want [1 2 4 8] marked 4 (or 8 on a loaded machine)", levels, rates, marked)
	}
	for i, c := range cs {
		if c.Profile.MaxThroughput && rates[i] < 0.75*ideal {
			t.Errorf("marked %d at %.2f requests/s, far below the server's %.2f", c.Cameras, rates[i], ideal)
		}
	}
	if len(series) != 1 || len(series[0]) != len(cs) || len(cs) < 3 || !slices.ContainsFunc(series[0], func(c protocol.Combination) bool { return c.Profile.MaxThroughput }) {
		t.Errorf("SeriesDone heard %d series, want one with the mark", len(series))
	}
}

// The rule's steps, on figures.
func TestProfileAutoRule(t *testing.T) {
	level := func(c int, thr float64, failed int) protocol.Combination {
		return protocol.Combination{ComboKey: protocol.ComboKey{Cameras: c}, Failed: failed,
			Profile: &protocol.ProfileLevel{RequestThroughput: thr}}
	}
	for _, tc := range []struct {
		name     string
		measured []protocol.Combination
		ceiling  int
		next     int
		ok       bool
	}{
		{"grows", []protocol.Combination{level(1, 10, 0), level(2, 19, 0)}, 256, 4, true},
		{"plateau", []protocol.Combination{level(1, 10, 0), level(2, 10.4, 0)}, 256, 0, false},
		{"failures", []protocol.Combination{level(1, 10, 0), level(2, 19, 1)}, 256, 0, false},
		{"capped at the ceiling", []protocol.Combination{level(4, 10, 0)}, 6, 6, true},
		{"ceiling", []protocol.Combination{level(6, 10, 0)}, 6, 0, false},
	} {
		next, ok := nextAutoLevel(tc.measured, tc.ceiling)
		if next != tc.next || ok != tc.ok {
			t.Errorf("%s: next %d %v, want %d %v", tc.name, next, ok, tc.next, tc.ok)
		}
	}
	listed := []protocol.Combination{level(1, 10, 0), level(2, 19, 0), level(4, 30, 0), level(8, 31, 0), level(16, 29.8, 0)}
	markMaxThroughput(listed)
	for _, c := range listed {
		if c.Profile.MaxThroughput != (c.Cameras == 4) {
			t.Errorf("level %d marked %v; want only 4, the smallest within 5 %% of 31", c.Cameras, c.Profile.MaxThroughput)
		}
	}
}

// A series that stops early hands on the levels it measured, with no
// max-throughput point: the rule never saw its end.
func TestProfileStoppedSeriesHandsOnItsLevelsUnmarked(t *testing.T) {
	f := newProfileFake(t, 4, time.Millisecond, time.Millisecond)
	stop := errors.New("the controller went away")
	var handed []protocol.Combination
	h := Hooks{
		ComboDone: func(idx int, _ *protocol.Combination) error {
			if idx == 1 {
				return stop
			}
			return nil
		},
		SeriesDone: func(levels []protocol.Combination) error {
			handed = append(handed, levels...)
			return nil
		},
	}
	cs, err := MeasureProfile(context.Background(), f.target(), profileSpec(20, 2, 2, 1, 2, 4), profileImages{}, h)
	if !errors.Is(err, stop) {
		t.Fatalf("err = %v, want the hook's", err)
	}
	if len(cs) != 1 || len(handed) != 1 || handed[0].Cameras != 1 || handed[0].Profile.MaxThroughput {
		t.Errorf("%d levels returned, %d handed on (%+v); want level 1, unmarked", len(cs), len(handed), handed)
	}
}
