package simengine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/vlmfleet/vlmfleet/agent/loadgen"
)

// serveChat answers a validated request once the model lets it: streaming
// token by token as the model writes them, or all at once.
func (s *Server) serveChat(ctx context.Context, w http.ResponseWriter, req parsedRequest, j *job) {
	id := fmt.Sprintf("chatcmpl-sim%012x", s.ids.Add(1))
	created := time.Now().Unix()
	prompt := s.promptTokens(req)
	notify := make(chan struct{}, 1)
	s.submit(j, req, notify)
	llama := s.p.Engine == EngineLlamaCpp
	c := newChunker(id, created, s.opt.ServedName, llama, s.words)
	c.reason = finishReason(req, s.answerLength(req))

	var flush func()
	if req.stream {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Cache-Control", "no-cache")
		w.WriteHeader(http.StatusOK)
		rc := http.NewResponseController(w)
		flush = func() { _ = rc.Flush() }
		if !llama {
			// vLLM sends the role chunk as soon as it takes the request.
			c.role(w)
			flush()
		}
	}
	written, finished := 0, false
	for {
		select {
		case <-ctx.Done():
			s.cancel(j)
			s.opt.Log.Debug().Str("id", id).Int("tokens", written).Msg("simulated engine: client went away")
			return
		case <-notify:
		}
		st := s.snapshot(j)
		if req.stream && st.due > written {
			if written == 0 && llama {
				c.role(w)
			}
			for ; written < st.due; written++ {
				last := st.done && written == st.due-1 && !llama
				c.token(w, written, last)
				finished = finished || last
			}
			flush()
		}
		if !st.done {
			continue
		}
		if req.stream && !llama && !finished {
			c.write(w, map[string]any{"choices": c.choice(map[string]any{"content": ""}, c.reason)})
		}
		tm := s.timings(prompt, st)
		sim := s.simTimings(st)
		s.opt.Log.Debug().Str("id", id).Int("prompt_tokens", prompt).Int("images", len(req.images)).
			Float64("ttft_sim_s", st.firstAt-st.arrive).Msg("simulated engine: answered")
		usage := map[string]int{"prompt_tokens": prompt, "completion_tokens": st.due, "total_tokens": prompt + st.due}
		if !req.stream {
			s.writeWhole(w, c, req, st.due, usage, tm, sim)
			return
		}
		c.finish(w, req, usage, tm, sim)
		flush()
		return
	}
}

// timings is llama.cpp's timings object, in simulated milliseconds.
func (s *Server) timings(prompt int, st snapshot) map[string]float64 {
	promptMS := (st.firstAt - st.arrive) * 1000
	predMS := (st.doneAt - st.firstAt) * 1000
	t := map[string]float64{
		"cache_n": 0, "prompt_n": float64(prompt), "prompt_ms": promptMS,
		"predicted_n": float64(st.due), "predicted_ms": predMS,
	}
	if prompt > 0 && promptMS > 0 {
		t["prompt_per_token_ms"] = promptMS / float64(prompt)
		t["prompt_per_second"] = float64(prompt) / promptMS * 1000
	}
	if st.due > 1 && predMS > 0 {
		t["predicted_per_token_ms"] = predMS / float64(st.due-1)
		t["predicted_per_second"] = float64(st.due-1) / predMS * 1000
	}
	return t
}

// simTimings are a request's times in the simulator's own clock (see
// clock.go), sent with the last chunk of its answer (loadgen.loadgen.SimTimingsKey):
// the load generator takes them in place of the times it saw, so that no
// delay of the host is multiplied by the speedup.
func (s *Server) simTimings(st snapshot) loadgen.SimTimings {
	t := loadgen.SimTimings{
		TTFT:      (st.firstAt - st.arrive) / s.speedup,
		LastToken: (st.doneAt - st.arrive) / s.speedup,
		E2E:       (st.doneAt - st.arrive) / s.speedup,
	}
	arrive := st.arrive / s.speedup
	t.Arrive = &arrive
	if st.tick >= 0 {
		t.Late = max(0, st.arrive-st.tick) / s.speedup
		t.NextTick = &st.nextTick
	}
	return t
}

// chunker writes SSE chunks the way the profile's engine does.
type chunker struct {
	id      string
	created int64
	model   string
	llama   bool
	words   []string
	// reason is the answer's finish_reason (finishReason).
	reason string
	// tok is a token chunk split around its content: a stream sped up 40
	// times writes tens of thousands of them a second, too many to build
	// each as a map for the JSON encoder.
	tok [2][]byte
}

// tokenMark stands for a token's content in the chunk template.
const tokenMark = "\x00"

func newChunker(id string, created int64, model string, llama bool, words []string) chunker {
	c := chunker{id: id, created: created, model: model, llama: llama, words: words}
	var b bytes.Buffer
	c.write(&b, map[string]any{"choices": c.choice(map[string]any{"content": tokenMark}, nil)})
	before, after, _ := bytes.Cut(b.Bytes(), []byte(`"\u0000"`))
	c.tok = [2][]byte{before, after}
	return c
}

func (c chunker) write(w io.Writer, v map[string]any) {
	v["id"], v["object"], v["created"], v["model"] = c.id, "chat.completion.chunk", c.created, c.model
	if c.llama {
		v["system_fingerprint"] = "b0000-simulated"
	}
	b, _ := json.Marshal(v)
	fmt.Fprintf(w, "data: %s\n\n", b)
}

func (c chunker) choice(delta map[string]any, finish any) []map[string]any {
	ch := map[string]any{"index": 0, "delta": delta, "finish_reason": finish}
	if !c.llama {
		ch["logprobs"] = nil
	}
	return []map[string]any{ch}
}

// role is the role-only first chunk: llama.cpp sends "content":null, vLLM "".
func (c chunker) role(w http.ResponseWriter) {
	var content any = ""
	if c.llama {
		content = nil
	}
	c.write(w, map[string]any{"choices": c.choice(map[string]any{"role": "assistant", "content": content}, nil)})
}

// token writes one token; vLLM marks the last one with its finish reason.
func (c chunker) token(w io.Writer, i int, last bool) {
	if last {
		c.write(w, map[string]any{"choices": c.choice(map[string]any{"content": answerToken(c.words, i)}, c.reason)})
		return
	}
	content, _ := json.Marshal(answerToken(c.words, i))
	_, _ = w.Write(c.tok[0])
	_, _ = w.Write(content)
	_, _ = w.Write(c.tok[1])
}

// finish ends the stream: llama.cpp's finish chunk, the usage chunk with no
// choices when asked for, llama.cpp's timings and the simulated timings on
// the last chunk, then [DONE].
func (c chunker) finish(w http.ResponseWriter, req parsedRequest, usage map[string]int, tm map[string]float64, sim loadgen.SimTimings) {
	if c.llama {
		v := map[string]any{"choices": c.choice(map[string]any{}, c.reason)}
		if !req.includeUsage {
			v["timings"], v[loadgen.SimTimingsKey] = tm, sim
		}
		c.write(w, v)
	}
	switch {
	case req.includeUsage:
		v := map[string]any{"choices": []any{}, "usage": usage, loadgen.SimTimingsKey: sim}
		if c.llama {
			v["timings"] = tm
		}
		c.write(w, v)
	case !c.llama:
		c.write(w, map[string]any{"choices": []any{}, loadgen.SimTimingsKey: sim})
	}
	fmt.Fprint(w, "data: [DONE]\n\n")
}

func (s *Server) writeWhole(w http.ResponseWriter, c chunker, req parsedRequest, n int, usage map[string]int, tm map[string]float64, sim loadgen.SimTimings) {
	var b strings.Builder
	for i := range n {
		b.WriteString(answerToken(c.words, i))
	}
	ch := map[string]any{"index": 0, "finish_reason": c.reason,
		"message": map[string]any{"role": "assistant", "content": b.String()}}
	if !c.llama {
		ch["logprobs"] = nil
	}
	v := map[string]any{"id": c.id, "object": "chat.completion", "created": c.created, "model": c.model,
		"choices": []any{ch}, "usage": usage, loadgen.SimTimingsKey: sim}
	if c.llama {
		v["timings"] = tm
	}
	writeJSON(w, http.StatusOK, v)
}

// writeError answers with the engine's error document.
func (s *Server) writeError(w http.ResponseWriter, err error) {
	re := &requestError{code: http.StatusInternalServerError, msg: err.Error()}
	errors.As(err, &re)
	typ := "invalid_request_error"
	switch {
	case !(s.p.Engine == EngineLlamaCpp) && re.code == http.StatusNotFound:
		typ = "NotFoundError"
	case !(s.p.Engine == EngineLlamaCpp) && re.code == http.StatusBadRequest:
		typ = "BadRequestError"
	case re.code >= 500:
		typ = "server_error"
	}
	s.opt.Log.Debug().Int("code", re.code).Str("error", re.msg).Msg("simulated engine: refused request")
	writeJSON(w, re.code, map[string]any{"error": map[string]any{"message": re.msg, "type": typ, "code": re.code}})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

// answerWords is the simulated answer, cycled: a plausible scene description.
func answerWords() []string {
	return strings.Fields(`The image shows a street scene in daylight. Several cars are parked along the
right side of the road, and a white van is waiting at the intersection. Two pedestrians walk on the
sidewalk near a shop with a green awning, one of them carrying a bag. Trees line the far side of the
street, and a row of brick buildings with large windows rises behind them. Traffic lights, a bus stop
and a few bicycles are visible. The sky is partly cloudy and the light suggests late afternoon.
Nothing unusual or dangerous is happening in the scene.`)
}

// answerToken is the i-th token of the answer: one word, space-led after the first.
func answerToken(words []string, i int) string {
	w := words[i%len(words)]
	if i == 0 {
		return w
	}
	return " " + w
}
