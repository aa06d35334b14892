package simlab

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/vlmfleet/vlmfleet/agent"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// ProfileHost is one simulated data-center host of `vlmfleet demo
// --profiles`: an agent whose deployments are the published
// configurations of its GPU, and a sweep for each that measures the
// configuration's published lines.
type ProfileHost struct {
	Device
	Sweeps []protocol.Sweep
}

// profileConfig is one published configuration: its lines share a model,
// GPU, precision and TP.
type profileConfig struct {
	model, gpu, precision string
	tp                    int
}

// realFirstFigure is how long, in real time, the shortest figure a demo
// level times (its TTFT, or a whole answer not streamed) runs at the
// speed-up profileSpeedup chooses: long enough that the client's and the
// simulator's own moments, which the speed-up multiplies back, stay far
// below the published figures' 10 % bound.
const realFirstFigureMs = 10

// ProfileDemo is the profile demo's lab: a host per GPU of the published
// lines, each offering the configurations published on it, and a sweep
// per configuration and length pair that measures its lines (their image,
// streamed or not as published, concurrency by the automatic rule).
func ProfileDemo(published []protocol.ProfileRow) ([]ProfileHost, error) {
	configs := map[profileConfig][]protocol.ProfileRow{}
	var order []profileConfig
	for _, r := range published {
		k := profileConfig{r.Model, r.GPU, r.Precision, r.TP}
		if _, ok := configs[k]; !ok {
			order = append(order, k)
		}
		configs[k] = append(configs[k], r)
	}
	hosts := map[string]*ProfileHost{}
	var out []*ProfileHost
	for _, k := range order {
		h := hosts[k.gpu]
		if h == nil {
			h = &ProfileHost{Device: Device{ID: profileHostID(k.gpu), Device: k.gpu, Speedup: 1}}
			hosts[k.gpu] = h
			out = append(out, h)
		}
		base, err := profileDeployment(k)
		if err != nil {
			return nil, err
		}
		// A series of each length pair, each on a deployment of its own
		// speed-up: a text of 60,000 tokens runs a hundred times longer
		// than one of 1,000 and may run that much faster.
		for _, series := range byLengths(configs[k]) {
			dep := base
			dep.ID = fmt.Sprintf("%s-isl%d-osl%d", base.ID, deref(series[0].ISL), series[0].OSL)
			dep.Engine.SimSpeedup = profileSpeedup(series)
			h.Deployments = append(h.Deployments, dep)
			h.Sweeps = append(h.Sweeps, protocol.Sweep{
				Name: fmt.Sprintf("profile demo: %s %s TP%d on %s, ISL %d OSL %d", k.model, k.precision, k.tp, k.gpu,
					deref(series[0].ISL), series[0].OSL),
				Agents: []string{h.ID}, Deployments: []string{dep.ID}, Workload: profileWorkload(series),
			})
		}
	}
	res := make([]ProfileHost, len(out))
	for i, h := range out {
		res[i] = *h
	}
	return res, nil
}

// byLengths splits a configuration's lines by (ISL, OSL), in the order
// published.
func byLengths(rows []protocol.ProfileRow) [][]protocol.ProfileRow {
	var out [][]protocol.ProfileRow
	at := map[protocol.LengthPair]int{}
	for _, r := range rows {
		pair := protocol.LengthPair{ISL: deref(r.ISL), OSL: r.OSL}
		i, ok := at[pair]
		if !ok {
			i = len(out)
			at[pair] = i
			out = append(out, nil)
		}
		out[i] = append(out[i], r)
	}
	return out
}

// profileHostID is the agent id of a GPU's host: "sim-h100-hbm3-80gb".
func profileHostID(gpu string) string {
	return "sim-" + strings.ToLower(strings.NewReplacer(" ", "-", "_", "-").Replace(gpu))
}

// profileDeployment is the simulated deployment of configuration k.
func profileDeployment(k profileConfig) (agent.DeploymentConfig, error) {
	deps, err := agent.SimulatedDeployments(k.gpu, 1, k.model)
	if err != nil {
		return agent.DeploymentConfig{}, fmt.Errorf("simlab: profile demo: %w", err)
	}
	for _, d := range deps {
		if strings.EqualFold(d.Quantization, k.precision) && max(d.Engine.TensorParallelSize, 1) == k.tp {
			return d, nil
		}
	}
	return agent.DeploymentConfig{}, fmt.Errorf("simlab: profile demo: no simulated deployment of %s %s TP%d on %s", k.model, k.precision, k.tp, k.gpu)
}

// profileSpeedup is the speed-up of a configuration: its shortest
// published first figure (TTFT, or request latency where not streamed)
// runs realFirstFigureMs of real time.
func profileSpeedup(rows []protocol.ProfileRow) float64 {
	shortest := math.Inf(1)
	for _, r := range rows {
		if r.Profile != protocol.ProfileMinLatency {
			continue
		}
		if f := cmp.Or(r.TTFTMs, r.RequestLatencyMs); f != nil {
			shortest = min(shortest, *f)
		}
	}
	if math.IsInf(shortest, 1) {
		return 1
	}
	return max(1, math.Floor(shortest/realFirstFigureMs))
}

// profileWorkload measures a configuration's lines: their (ISL, OSL)
// pairs in the order published, their image, streamed unless the lines
// have no TTFT (nemoretriever-parse's are not), with the automatic rule.
func profileWorkload(rows []protocol.ProfileRow) protocol.Workload {
	w := protocol.DefaultProfileWorkload()
	p := *w.Profile
	p.Lengths, p.Concurrency = nil, nil
	p.NoStream = true
	for _, r := range rows {
		pair := protocol.LengthPair{ISL: deref(r.ISL), OSL: r.OSL}
		if !slices.Contains(p.Lengths, pair) {
			p.Lengths = append(p.Lengths, pair)
		}
		p.Resolutions = []protocol.Resolution{{Width: r.Width, Height: r.Height}}
		p.ImageFormat = r.ImageFormat
		if r.TTFTMs != nil || r.ITLMs != nil {
			p.NoStream = false
		}
	}
	w.Profile = &p
	// Answers of the longest texts at the highest levels run minutes of
	// the device's time; the rule, not a timeout, ends a series.
	w.RequestTimeoutSec = 3600
	return w
}

func deref(v *int) int {
	if v == nil {
		return 0
	}
	return *v
}
