package measure

import (
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/vlmfleet/vlmfleet/protocol"
)

// cachedShareWarn is the share of the prompt tokens served from a cache at
// which a run meant to be cache-free is said not to be. A few tokens of the
// chat template shared by every request are no concern; the pictures are.
const cachedShareWarn = 0.1

// warn records a doubt about the run's figures in the run and the log.
func (m *measurement) warn(msg string) {
	m.spec.Log.Warn().Msg(msg)
	if len(m.run.Warnings) < protocol.MaxListLen {
		m.run.Warnings = append(m.run.Warnings, msg)
	}
}

// slotsWarning is set when the server says it serves fewer requests at once
// (llama.cpp's /props total_slots) than the plan has cameras: the cameras
// beyond its slots wait in its queue, and their time to first token
// measures the queue, not the engine.
func slotsWarning(info protocol.EngineInfo, w protocol.Workload) string {
	slots, err := strconv.Atoi(info.Props["total_slots"])
	if err != nil || slots <= 0 || len(w.Cameras) == 0 {
		return ""
	}
	most := slices.Max(w.Cameras)
	if slots >= most {
		return ""
	}
	return fmt.Sprintf("the server has %d slots (total_slots) but the plan has up to %d cameras: "+
		"requests beyond %d wait in its queue; start it with at least -np %d", slots, most, slots, most)
}

// searchSlotsWarning is set when a search measured a level with more
// cameras than the server serves at once (llama.cpp's total_slots, the
// num_parallel an agent started Ollama with): its figure there, and so the
// exact Max Cameras above them, is the queue's. The message is the same
// for every such level, so that the run says it once.
func searchSlotsWarning(info protocol.EngineInfo, w protocol.Workload, c *protocol.Combination) string {
	slots, err := strconv.Atoi(info.Props["total_slots"])
	if err != nil {
		slots, err = strconv.Atoi(info.Props["num_parallel"])
	}
	if err != nil || slots <= 0 || !c.Search || c.Cameras <= slots {
		return ""
	}
	return fmt.Sprintf("the search measured levels above the %d requests the server serves at once: requests beyond %d waited in its queue, "+
		"so its levels above %d measure the queue; serve the search's ceiling of %d at once (llama.cpp's -np, Ollama's OLLAMA_NUM_PARALLEL)",
		slots, slots, slots, w.Search)
}

// cacheFree is whether the workload means its requests to be served
// without a prompt cache.
func cacheFree(w protocol.Workload) bool {
	return (w.UniqueImages != nil && *w.UniqueImages) || (w.CachePrompt != nil && !*w.CachePrompt)
}

// cacheWarning is set when a combination of a run meant to be cache-free
// had a good share of its prompt tokens served from a cache, as the server
// reported them: its time to first token is then that of a cache hit.
func cacheWarning(w protocol.Workload, c *protocol.Combination) string {
	prompt := c.PromptTokens.Mean * float64(c.PromptTokens.N)
	if !cacheFree(w) || c.CachedPromptTokens <= 0 || prompt <= 0 {
		return ""
	}
	share := float64(c.CachedPromptTokens) / prompt
	if share < cachedShareWarn {
		return ""
	}
	return fmt.Sprintf("%s: %.0f%% of the prompt tokens (%d of %.0f, in %d of %d requests) were served from the server's cache "+
		"in a run meant to be cache-free; its TTFT is a cache hit's (turn the server's prompt cache off, or use --unique-images)",
		c.ComboKey, math.Floor(100*share), c.CachedPromptTokens, prompt, c.CachedRequests, c.Completed)
}
