package loadgen

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/vlmfleet/vlmfleet/protocol"
)

// traceRead is one read of a recorded response body: the bytes it
// returned and when, after the request was sent.
type traceRead struct {
	at   time.Duration
	data []byte
}

var traceHeader = regexp.MustCompile(`(?m)^-- ([0-9.]+) --\n`)

// parseTrace reads a recording of testdata/streams: comment lines, then
// sections "-- SECONDS --\n" whose bytes, up to the next header, are one
// read exactly. A section without bytes is the time the body ended.
func parseTrace(b []byte) ([]traceRead, error) {
	heads := traceHeader.FindAllSubmatchIndex(b, -1)
	if len(heads) == 0 {
		return nil, fmt.Errorf("no section")
	}
	var out []traceRead
	for i, h := range heads {
		at, err := time.ParseDuration(string(b[h[2]:h[3]]) + "s")
		if err != nil {
			return nil, err
		}
		end := len(b)
		if i+1 < len(heads) {
			end = heads[i+1][0]
		}
		out = append(out, traceRead{at: at, data: b[h[1]:end]})
	}
	return out, nil
}

func loadTrace(t testing.TB, name string) []traceRead {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "streams", name))
	if err != nil {
		t.Fatal(err)
	}
	tr, err := parseTrace(b)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return tr
}

// traceBody replays a recording as a response body, each section one read
// (or several, when the reader's buffer is smaller), and stands in for the
// clock: the time is that of the last read.
type traceBody struct {
	reads []traceRead
	rest  []byte
	now   time.Duration
	// end is returned once the reads are done: io.EOF, or a broken connection.
	end error
}

func (b *traceBody) Read(p []byte) (int, error) {
	for len(b.rest) == 0 {
		if len(b.reads) == 0 {
			return 0, b.end
		}
		b.now, b.rest, b.reads = b.reads[0].at, b.reads[0].data, b.reads[1:]
	}
	n := copy(p, b.rest)
	b.rest = b.rest[n:]
	return n, nil
}

func (b *traceBody) since(time.Time) time.Duration { return b.now }

// replay measures a recorded stream as a camera does, on the recording's
// clock: the record, and whether the connection could be used again.
func replay(reads []traceRead, end error) (protocol.RequestRecord, bool) {
	body := &traceBody{reads: reads, end: end}
	c := newCamera()
	c.since = body.since
	var rec protocol.RequestRecord
	keep := c.stream(context.Background(), &runner{}, body, time.Now(), &rec)
	return rec, keep
}

// sec is a recorded time as the record writes it.
func sec(s string) float64 {
	d, err := time.ParseDuration(s + "s")
	if err != nil {
		panic(err)
	}
	return d.Seconds()
}

// sameRecord reports the fields in which got differs from want; times and
// rates are compared to 1e-9.
func sameRecord(got, want protocol.RequestRecord) []string {
	var diffs []string
	for _, f := range []struct {
		name  string
		a, b  *float64
		scale float64
	}{
		{"TTFB", &got.TTFB, &want.TTFB, 1}, {"RoleChunk", &got.RoleChunk, &want.RoleChunk, 1},
		{"TTFT", &got.TTFT, &want.TTFT, 1}, {"LastToken", &got.LastToken, &want.LastToken, 1},
		{"E2E", &got.E2E, &want.E2E, 1}, {"TPS", &got.TPS, &want.TPS, 1}, {"ITL", &got.ITL, &want.ITL, 1},
	} {
		if math.Abs(*f.a-*f.b) > 1e-9*math.Max(1, math.Abs(*f.b)) {
			diffs = append(diffs, fmt.Sprintf("%s %.12g, want %.12g", f.name, *f.a, *f.b))
		}
		*f.a, *f.b = 0, 0
	}
	if !reflect.DeepEqual(got, want) {
		diffs = append(diffs, fmt.Sprintf("\n got  %+v\n want %+v", got, want))
	}
	return diffs
}

// edit replaces old with new in the recording's bytes; it must occur.
func edit(t *testing.T, reads []traceRead, old, new string) []traceRead {
	t.Helper()
	out := make([]traceRead, len(reads))
	found := false
	for i, r := range reads {
		out[i] = r
		if bytes.Contains(r.data, []byte(old)) {
			out[i].data = bytes.ReplaceAll(r.data, []byte(old), []byte(new))
			found = true
		}
	}
	if !found {
		t.Fatalf("edit: %q is not in the recording", old)
	}
	return out
}

// at is a read of the given bytes at the given time (seconds).
func at(s, data string) traceRead {
	return traceRead{at: time.Duration(math.Round(sec(s) * 1e9)), data: []byte(data)}
}

func llamaTimings() map[string]float64 {
	return map[string]float64{"cache_n": 0, "prompt_n": 812, "prompt_ms": 131.204, "prompt_per_token_ms": 0.16158128078817735,
		"prompt_per_second": 6188.835706228469, "predicted_n": 7, "predicted_ms": 69.987, "predicted_per_token_ms": 9.998142857142857,
		"predicted_per_second": 100.01857452097104}
}

// TestStreamRecordings replays streams in the byte layouts of vLLM,
// llama-server and Ollama, two captured from the simulated engine, and
// ways each can end badly, on the recordings' own clock: every time in the
// record is exactly that of the read that completed the event.
func TestStreamRecordings(t *testing.T) {
	vllm := loadTrace(t, "vllm.trace")
	llama := loadTrace(t, "llama-server.trace")
	ollama := loadTrace(t, "ollama.trace")
	vllmDone := protocol.RequestRecord{
		RoleChunk: sec("0.0021"), TTFT: sec("0.0873"), LastToken: sec("0.2053"), E2E: sec("0.2062"),
		// 11 token chunks, 12 tokens by usage: the 10 chunks after the
		// first read stand for 12*10/11 tokens.
		CompletionTokens: 12, TokenSource: protocol.TokensFromUsage, PromptTokens: 1247, DecodeTokens: 11,
		TPS: 11 / (sec("0.2053") - sec("0.0873")), ITL: (sec("0.2053") - sec("0.0873")) / 10, FinishReason: "stop",
	}
	llamaDone := protocol.RequestRecord{
		// The role-only chunk came in the read of the first token.
		RoleChunk: sec("0.1412"), TTFT: sec("0.1412"), LastToken: sec("0.2108"), E2E: sec("0.2134"),
		CompletionTokens: 7, TokenSource: protocol.TokensFromUsage, PromptTokens: 812, DecodeTokens: 6,
		TPS: 6 / (sec("0.2108") - sec("0.1412")), ITL: (sec("0.2108") - sec("0.1412")) / 6, FinishReason: "stop",
		Timings: llamaTimings(),
	}
	cases := []struct {
		name  string
		reads []traceRead
		end   error
		want  protocol.RequestRecord
		keep  bool
	}{
		{name: "vllm", reads: vllm, want: vllmDone, keep: true},
		{name: "llama-server", reads: llama, want: llamaDone, keep: true},
		{name: "ollama", reads: ollama, keep: true, want: protocol.RequestRecord{
			// No role-only chunk: the first chunk carries the first token.
			TTFT: sec("0.3105"), LastToken: sec("0.3865"), E2E: sec("0.3921"),
			CompletionTokens: 6, TokenSource: protocol.TokensFromUsage, PromptTokens: 1101, DecodeTokens: 5,
			TPS: 5 / (sec("0.3865") - sec("0.3105")), ITL: (sec("0.3865") - sec("0.3105")) / 5, FinishReason: "stop",
		}},
		{name: "sim-vllm", reads: loadTrace(t, "sim-vllm.trace"), keep: true, want: protocol.RequestRecord{
			// The simulator's own times replace the ones the client saw.
			RoleChunk: sec("0.0013"), TTFT: 0.013541566126611565, LastToken: 0.06308762114339961, E2E: 0.06308762114339961,
			CompletionTokens: 8, TokenSource: protocol.TokensFromUsage, PromptTokens: 9, DecodeTokens: 7,
			TPS: 7 / (0.06308762114339961 - 0.013541566126611565), ITL: (0.06308762114339961 - 0.013541566126611565) / 7,
			FinishReason: "length",
		}},
		{name: "sim-llamacpp", reads: loadTrace(t, "sim-llamacpp.trace"), keep: true, want: protocol.RequestRecord{
			RoleChunk: sec("0.0268"), TTFT: 0.02465051558377195, LastToken: 0.07385009469135169, E2E: 0.07385009469135169,
			CompletionTokens: 8, TokenSource: protocol.TokensFromUsage, PromptTokens: 9, DecodeTokens: 7,
			TPS: 7 / (0.07385009469135169 - 0.02465051558377195), ITL: (0.07385009469135169 - 0.02465051558377195) / 7,
			FinishReason: "length",
			Timings: map[string]float64{"cache_n": 0, "predicted_ms": 491.99579107579734, "predicted_n": 8,
				"predicted_per_second": 14.22776399101669, "predicted_per_token_ms": 70.2851130108282,
				"prompt_ms": 246.50515583771949, "prompt_n": 9, "prompt_per_second": 36.51039252876692,
				"prompt_per_token_ms": 27.38946175974661},
		}},
		{name: "vllm cached prompt", keep: true,
			reads: edit(t, vllm, `"completion_tokens":12}`, `"completion_tokens":12,"prompt_tokens_details":{"cached_tokens":1024}}`),
			want:  func() protocol.RequestRecord { r := vllmDone; r.CachedTokens = 1024; return r }()},
		{name: "llama-server cached prompt", keep: true,
			reads: edit(t, llama, `"cache_n":0`, `"cache_n":811`),
			want: func() protocol.RequestRecord {
				r := llamaDone
				r.Timings = llamaTimings()
				r.Timings["cache_n"] = 811
				r.CachedTokens = 811
				return r
			}()},
		{name: "llama-server without usage", keep: true,
			reads: edit(t, llama, `"usage":{"completion_tokens":7,"prompt_tokens":812,"total_tokens":819},`, ""),
			want: func() protocol.RequestRecord {
				r := llamaDone
				r.TokenSource, r.PromptTokens = protocol.TokensFromChunks, 0
				return r
			}()},
		{name: "vllm whole answer in one read", keep: true,
			reads: []traceRead{{at: 250 * time.Millisecond, data: joinReads(vllm)}},
			want: protocol.RequestRecord{
				// Nothing came after the first token's read: no rate.
				RoleChunk: 0.25, TTFT: 0.25, LastToken: 0.25, E2E: 0.25,
				CompletionTokens: 12, TokenSource: protocol.TokensFromUsage, PromptTokens: 1247, FinishReason: "stop",
			}},
		{name: "vllm bytes after [DONE]", keep: true,
			reads: append(append([]traceRead(nil), vllm...), at("0.3", ": keep-alive\n\n")), want: vllmDone},
		{name: "vllm over 1 MiB after [DONE]", keep: false,
			reads: append(append([]traceRead(nil), vllm...), at("0.3", strings.Repeat(": pad\n", 1<<18))), want: vllmDone},
		{name: "vllm ends after five tokens", end: io.EOF,
			reads: append(append([]traceRead(nil), vllm[:6]...), at("0.5", "")),
			want: protocol.RequestRecord{
				RoleChunk: sec("0.0021"), TTFT: sec("0.0873"), LastToken: sec("0.1345"), E2E: 0.5,
				CompletionTokens: 5, TokenSource: protocol.TokensFromChunks, DecodeTokens: 4,
				TPS: 4 / (sec("0.1345") - sec("0.0873")), ITL: (sec("0.1345") - sec("0.0873")) / 4,
				Error: "stream ended without [DONE] or finish_reason after 5 token chunks",
			}},
		{name: "vllm connection lost after three tokens", end: io.ErrUnexpectedEOF,
			reads: append(append([]traceRead(nil), vllm[:4]...), at("0.3", "")),
			want: protocol.RequestRecord{
				RoleChunk: sec("0.0021"), TTFT: sec("0.0873"), LastToken: sec("0.1109"), E2E: 0.3,
				CompletionTokens: 3, TokenSource: protocol.TokensFromChunks, DecodeTokens: 2,
				TPS: 2 / (sec("0.1109") - sec("0.0873")), ITL: (sec("0.1109") - sec("0.0873")) / 2,
				Error: "stream broken after 3 token chunks: connection closed by the server",
			}},
		{name: "vllm error event after two tokens",
			reads: append(append([]traceRead(nil), vllm[:3]...),
				at("0.15", `data: {"error":{"object":"error","message":"CUDA out of memory","type":"InternalServerError","param":null,"code":500}}`+"\n\n"),
				at("0.16", "data: [DONE]\n\n")),
			want: protocol.RequestRecord{
				// The stream is abandoned at the error: no end time.
				RoleChunk: sec("0.0021"), TTFT: sec("0.0873"), LastToken: sec("0.0991"),
				CompletionTokens: 2, TokenSource: protocol.TokensFromChunks, DecodeTokens: 1,
				TPS: 1 / (sec("0.0991") - sec("0.0873")), ITL: sec("0.0991") - sec("0.0873"),
				Error: "server error in stream: CUDA out of memory",
			}},
		{name: "vllm unreadable chunk",
			reads: append(append([]traceRead(nil), vllm[:2]...), at("0.1", "data: {\"choices\":[{\"delta\":{\"content\":\"x\"}}\n\n")),
			want: protocol.RequestRecord{
				RoleChunk: sec("0.0021"), TTFT: sec("0.0873"), LastToken: sec("0.0873"),
				CompletionTokens: 1, TokenSource: protocol.TokensFromChunks,
				Error: `unreadable stream chunk: malformed JSON: {"choices":[{"delta":{"content":"x"}}`,
			}},
		{name: "llama-server finish without a token", keep: false,
			reads: []traceRead{
				at("0.05", string(llama[0].data[:bytes.Index(llama[0].data, []byte("\n\n"))+2])),
				llama[len(llama)-3], llama[len(llama)-2], llama[len(llama)-1],
			},
			want: protocol.RequestRecord{
				RoleChunk: 0.05, E2E: sec("0.2134"), CompletionTokens: 7, TokenSource: protocol.TokensFromUsage,
				PromptTokens: 812, FinishReason: "stop", Timings: llamaTimings(),
				Error: "no token in the response (finish_reason stop)",
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			end := c.end
			if end == nil {
				end = io.EOF
			}
			got, keep := replay(c.reads, end)
			for _, d := range sameRecord(got, c.want) {
				t.Error(d)
			}
			if keep != c.keep {
				t.Errorf("connection reusable %v, want %v", keep, c.keep)
			}
		})
	}
}

func joinReads(reads []traceRead) []byte {
	var b []byte
	for _, r := range reads {
		b = append(b, r.data...)
	}
	return b
}

// TestStreamRecordingsInSmallReads cuts every read of each recording into
// reads of a few bytes at the same time: how the body arrives in the
// buffer changes no figure.
func TestStreamRecordingsInSmallReads(t *testing.T) {
	for _, name := range []string{"vllm.trace", "llama-server.trace", "ollama.trace", "sim-vllm.trace", "sim-llamacpp.trace"} {
		reads := loadTrace(t, name)
		want, wantKeep := replay(reads, io.EOF)
		for _, size := range []int{1, 7, 64} {
			var small []traceRead
			for _, r := range reads {
				for d := r.data; len(d) > 0; d = d[min(size, len(d)):] {
					small = append(small, traceRead{at: r.at, data: d[:min(size, len(d))]})
				}
			}
			got, keep := replay(small, io.EOF)
			for _, d := range sameRecord(got, want) {
				t.Errorf("%s in reads of %d bytes: %s", name, size, d)
			}
			if keep != wantKeep {
				t.Errorf("%s in reads of %d bytes: reusable %v, want %v", name, size, keep, wantKeep)
			}
		}
	}
}

// TestStreamStateEvents feeds events to the stream state directly, one
// read per step, without a body or a scanner.
func TestStreamStateEvents(t *testing.T) {
	type step struct {
		ms     int
		events []string
	}
	cases := []struct {
		name  string
		steps []step
		ended bool // the body ended in the last read
		want  protocol.RequestRecord
		over  bool
	}{
		{name: "role-only chunk is not the first token",
			steps: []step{{2, []string{vllmRoleChunk, emptyDelta}}, {40, []string{tokenChunk("a")}}, {50, []string{tokenChunk("b"), finishChunk}}, {51, []string{"[DONE]"}}},
			want: protocol.RequestRecord{RoleChunk: 0.002, TTFT: 0.04, LastToken: 0.05, E2E: 0.051, CompletionTokens: 2,
				TokenSource: protocol.TokensFromChunks, DecodeTokens: 1, TPS: 1 / 0.01, ITL: 0.01, FinishReason: "stop"},
			over: true},
		{name: "reasoning is a token",
			steps: []step{{5, []string{`{"choices":[{"delta":{"reasoning_content":"hm"}}]}`}}, {9, []string{"[DONE]"}}},
			want: protocol.RequestRecord{TTFT: 0.005, LastToken: 0.005, E2E: 0.009, CompletionTokens: 1,
				TokenSource: protocol.TokensFromChunks},
			over: true},
		{name: "usage without completion tokens counts chunks",
			steps: []step{{5, []string{tokenChunk("a"), usageChunk(30, 0)}}, {6, []string{"[DONE]"}}},
			want: protocol.RequestRecord{TTFT: 0.005, LastToken: 0.005, E2E: 0.006, CompletionTokens: 1,
				TokenSource: protocol.TokensFromChunks, PromptTokens: 30},
			over: true},
		{name: "a finish reason ends a stream that closes without [DONE]",
			steps: []step{{5, []string{tokenChunk("a")}}, {7, []string{finishChunk}}}, ended: true,
			want: protocol.RequestRecord{TTFT: 0.005, LastToken: 0.005, E2E: 0.007, CompletionTokens: 1,
				TokenSource: protocol.TokensFromChunks, FinishReason: "stop"}},
		{name: "an error event abandons the stream",
			steps: []step{{5, []string{`{"error":{"message":"boom"}}`}}},
			want:  protocol.RequestRecord{TokenSource: protocol.TokensFromChunks, Error: "server error in stream: boom"},
			over:  true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var st streamState
			var rec protocol.RequestRecord
			st.reset(&rec)
			for _, s := range c.steps {
				st.arrived(time.Duration(s.ms) * time.Millisecond)
				for _, e := range s.events {
					st.event([]byte(e))
				}
			}
			if c.ended {
				st.ended()
			}
			if st.over() != c.over {
				t.Errorf("over %v, want %v", st.over(), c.over)
			}
			st.finish()
			for _, d := range sameRecord(rec, c.want) {
				t.Error(d)
			}
		})
	}
}

// BenchmarkStreamReplay is the client's own cost of reading one answer,
// without the network: a recording through camera.stream, one read per
// section.
func BenchmarkStreamReplay(b *testing.B) {
	for _, name := range []string{"vllm", "llama-server", "ollama"} {
		reads := loadTrace(b, name+".trace")
		b.Run(name, func(b *testing.B) {
			body := &traceBody{}
			c := newCamera()
			c.since = body.since
			r := &runner{}
			var rec protocol.RequestRecord
			for b.Loop() {
				body.reads, body.rest, body.end = reads, nil, io.EOF
				rec = protocol.RequestRecord{}
				if !c.stream(context.Background(), r, body, time.Time{}, &rec) {
					b.Fatal(rec.Error)
				}
			}
		})
	}
}
