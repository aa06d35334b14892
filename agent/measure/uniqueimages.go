package measure

import (
	"fmt"

	"github.com/vlmfleet/vlmfleet/agent/engine"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// hasCacheSwitch reports whether a switch vlmfleet sets keeps the engine's
// cache from answering a picture it has seen: the engine's cache field
// false on every request (llama.cpp's cache_prompt), a flag it was started
// with (engine.StartedWithoutCache), or a simulator (started or attached),
// which has no cache. An engine with no such switch, or an attached
// endpoint that does not say it has one, may cache as it likes.
func hasCacheSwitch(w protocol.Workload, info protocol.EngineInfo, displayName string) bool {
	if _, v, sent := cachePrompt(w, info, displayName); sent {
		return !v
	}
	if engine.SimulationOf(info).Simulated {
		return true
	}
	return engine.StartedWithoutCache(info)
}

// chooseUniqueImages settles whether the run's requests carry perturbed
// pictures and records the choice in the run's workload. The workload's
// word is honoured; left unset, an engine with no cache switch gets
// perturbed pictures, since the sixteen pictures cycle and a repeated one
// would be answered from its cache. A run told not to perturb them on
// such an engine says so in its warnings.
func (m *measurement) chooseUniqueImages() {
	w := &m.run.Workload
	switchable := hasCacheSwitch(*w, m.run.Engine, m.run.Config.Engine)
	if w.UniqueImages == nil {
		w.UniqueImages = protocol.Set(w.EffectiveUniqueImages(switchable))
		return
	}
	if !*w.UniqueImages && !switchable {
		m.warn(fmt.Sprintf("unique_images is false for %s, which has no switch for its prompt cache that vlmfleet sets: "+
			"the pictures repeat every %d requests and a repeated one may be answered from the cache, "+
			"so a time to first token can be a cache hit's", m.run.Config.Engine, m.run.Client.ImageCount))
	}
}
