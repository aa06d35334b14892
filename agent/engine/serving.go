package engine

import (
	"context"

	"github.com/vlmfleet/vlmfleet/protocol"
)

// servingEngine is what vlmfleet knows of one serving program wherever it
// runs: started by the agent, behind an external URL, or stood in for by
// the simulator (which takes the name of the engine it simulates). Every
// kind vlmfleet starts is one; its adapter answers these.
type servingEngine interface {
	// displayName is the engine as people know it (EngineInfo.Name,
	// Configuration.Engine): "vLLM", "llama.cpp".
	displayName() string
	// switches are the request fields through which it is told what a
	// measurement needs.
	switches() RequestSwitches
	// startedWithoutCache reports whether the command line it ran with
	// keeps its prompt cache from answering a picture it has seen.
	startedWithoutCache(command []string) bool
	// recognise looks at a server behind root ("http://host:port") whose
	// model list says it is owned by owner (lower case, "" when it does not
	// say), and reports how sure it is that the server is one of these,
	// with what the server says of itself.
	recognise(ctx context.Context, p *prober, root, owner string) (serverID, evidence)
}

// RequestSwitches are the request body fields that tell an engine, one
// request at a time, what a measurement needs of it.
type RequestSwitches struct {
	// CacheField is the boolean field that lets a request use the
	// engine's prompt cache (llama.cpp's "cache_prompt"); "" when the
	// engine has no such field.
	CacheField string
	// ForcedLength returns the fields that make an answer exactly n
	// tokens long whatever the model would rather say; nil when the
	// engine cannot be told so.
	ForcedLength func(n int) map[string]any
}

// evidence is how sure a look at a server is of what it is.
type evidence int

const (
	// notIt: nothing the server said points at the engine.
	notIt evidence = iota
	// weakly: an answer other engines could give too (a bare /version).
	weakly
	// ownedBy: the model list names the engine as the models' owner.
	ownedBy
	// fingerprint: an endpoint only this engine serves answered as it does.
	fingerprint
)

// servingEngines are the engines of the kinds vlmfleet starts, in the
// order of their kinds' names.
func servingEngines() []servingEngine {
	var out []servingEngine
	for _, k := range processKinds() {
		out = append(out, k.processAdapter)
	}
	return out
}

// servingEngineOf is the engine that ran info: the kind vlmfleet started,
// or for an external or simulated one, the engine of the name it says it
// is (info.Name) or, when it does not say, the name the deployment gave
// it. False when none is known.
func servingEngineOf(info protocol.EngineInfo, displayName string) (servingEngine, bool) {
	if k, ok := kindNamed(info.Kind); ok {
		if pk, started := k.(processKind); started {
			return pk.processAdapter, true
		}
	}
	for _, name := range []string{info.Name, displayName} {
		for _, s := range servingEngines() {
			if name != "" && s.displayName() == name {
				return s, true
			}
		}
	}
	return nil, false
}

// RequestSwitchesFor are the request fields the engine that ran info
// takes (see servingEngineOf for displayName); none for an engine
// vlmfleet does not know.
func RequestSwitchesFor(info protocol.EngineInfo, displayName string) RequestSwitches {
	if s, ok := servingEngineOf(info, displayName); ok {
		return s.switches()
	}
	return RequestSwitches{}
}

// StartedWithoutCache reports whether vlmfleet started the engine of info
// with a switch that keeps its prompt cache from answering a picture it
// has seen. An engine it did not start may cache as it likes.
func StartedWithoutCache(info protocol.EngineInfo) bool {
	k, ok := kindNamed(info.Kind)
	if !ok {
		return false
	}
	pk, started := k.(processKind)
	return started && pk.startedWithoutCache(info.Command)
}

// minTokensIgnoreEOS are the forced-length fields of the engines that take
// vLLM's sampling parameters beside OpenAI's: no end before n tokens
// (min_tokens), and none at the model's end-of-sequence token either
// (ignore_eos) until max_tokens.
func minTokensIgnoreEOS(n int) map[string]any {
	return map[string]any{"max_tokens": n, "min_tokens": n, "ignore_eos": true}
}
