package simengine

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/vlmfleet/vlmfleet/explorer/profiles"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// dcGroup is one published configuration's lines.
type dcGroup struct {
	model, gpu, precision string
	tp                    int
	minLat, maxThr        []protocol.ProfileRow
}

func (g *dcGroup) key() string {
	return fmt.Sprintf("%s/%s/%s/TP%d", g.model, g.gpu, g.precision, g.tp)
}

// islPoints counts the min-latency lines with an ISL: the points the
// prefill and ITL curves are fitted through.
func (g *dcGroup) islPoints() int {
	n := 0
	for _, r := range g.minLat {
		if r.ISL != nil && r.TTFTMs != nil && r.ITLMs != nil {
			n++
		}
	}
	return n
}

// DataCenterProfiles returns a profile per published data-center
// configuration (model, GPU, precision, TP) of the vision NIM tables, in
// the tables' order, fitted as docs/profiles.md describes.
func DataCenterProfiles() ([]Profile, error) {
	rows, err := profiles.Published()
	if err != nil {
		return nil, fmt.Errorf("data-center profiles: %w", err)
	}
	groups := groupPublished(rows)
	// The reference of a model is its configuration with the most points:
	// the shape the others, with fewer, are scaled to.
	refs := map[string]*DataCenter{}
	for _, g := range groups {
		if r, ok := refs[g.model]; ok && r != nil {
			continue
		}
		best := g
		for _, h := range groups {
			if h.model == g.model && h.islPoints() > best.islPoints() {
				best = h
			}
		}
		dc, err := fitCurves(best, nil)
		if err != nil {
			return nil, err
		}
		refs[g.model] = &dc
	}
	out := make([]Profile, 0, len(groups))
	for _, g := range groups {
		dc, err := fitCurves(g, refs[g.model])
		if err != nil {
			return nil, err
		}
		if dc.lines, err = fitLines(g, dc); err != nil {
			return nil, err
		}
		out = append(out, dcProfile(g, dc))
	}
	return out, nil
}

func groupPublished(rows []protocol.ProfileRow) []*dcGroup {
	var groups []*dcGroup
	byKey := map[string]*dcGroup{}
	for _, r := range rows {
		g := &dcGroup{model: r.Model, gpu: r.GPU, precision: r.Precision, tp: r.TP}
		if have, ok := byKey[g.key()]; ok {
			g = have
		} else {
			byKey[g.key()] = g
			groups = append(groups, g)
		}
		if r.Profile == protocol.ProfileMinLatency {
			g.minLat = append(g.minLat, r)
		} else {
			g.maxThr = append(g.maxThr, r)
		}
	}
	return groups
}

func dcProfile(g *dcGroup, dc DataCenter) Profile {
	p := Profile{
		Device: g.gpu, Model: g.model, ParamsB: dcParamsB(g.model), Quantization: g.precision, Engine: EngineVLLM,
		MaxImages: 1, DC: &dc,
	}
	n720 := float64(publishedPromptTokens(p.Model, 0, 1280, 720))
	p.TTFT720, p.TPS = dc.ttft.at(n720), 1/dc.itl.at(n720)
	return p
}

// profileTemplateTokens is what the chat template and the shortest text
// add to a profile request's prompt besides its sized text and image: one
// user message (see parseBody).
const profileTemplateTokens = 5

// publishedPromptTokens is the prompt a published line's requests carry
// by the simulator's count: the sized text (ISL, the image's tokens not
// counted), the image and the template.
func publishedPromptTokens(model string, isl, width, height int) int {
	return isl + modelImageTokens(model, width, height) + profileTemplateTokens
}

// fitCurves fits the prefill and ITL curves of a configuration: through
// its points where it has three, with the reference's shape where fewer.
func fitCurves(g *dcGroup, ref *DataCenter) (DataCenter, error) {
	dc := DataCenter{GPU: g.gpu, TP: g.tp, FromTP: g.tp}
	var ns, ttfts, itls []float64
	for _, r := range g.minLat {
		if r.ISL == nil || r.TTFTMs == nil || r.ITLMs == nil {
			continue
		}
		ns = append(ns, float64(publishedPromptTokens(g.model, *r.ISL, r.Width, r.Height)))
		ttfts = append(ttfts, *r.TTFTMs/1000)
		itls = append(itls, *r.ITLMs/1000)
	}
	if len(ns) == 0 {
		return fitLatencyOnly(g)
	}
	switch {
	case len(ns) >= 3:
		dc.ttft = quadratic(ns[:3], ttfts[:3])
	case ref == nil || len(ns) == 1:
		if ref == nil {
			return dc, fmt.Errorf("data-center profile %s: one point and no reference to scale", g.key())
		}
		dc.ttft = ref.ttft.scaled(ttfts[0] / ref.ttft.at(ns[0]))
	default:
		dc.ttft = twoPointShaped(ns, ttfts, ref.ttft)
	}
	if len(ns) >= 2 {
		dc.itl = linearFit(ns, itls)
	} else {
		dc.itl = ref.itl.scaled(itls[0] / ref.itl.at(ns[0]))
	}
	dc.ttft.lo = slices.Min(ns)
	return dc, nil
}

// fitLatencyOnly fits a configuration whose lines give request latency by
// OSL only (nemoretriever-parse, not streamed): latency = TTFT + ITL·(OSL−1)
// by least squares; the prefill is taken half fixed, half by prompt
// tokens, so that a smaller page costs less.
func fitLatencyOnly(g *dcGroup) (DataCenter, error) {
	dc := DataCenter{GPU: g.gpu, TP: g.tp, FromTP: g.tp}
	var osls, lats []float64
	n0 := 0.0
	for _, r := range g.minLat {
		if r.RequestLatencyMs == nil {
			continue
		}
		osls = append(osls, float64(r.OSL-1))
		lats = append(lats, *r.RequestLatencyMs/1000)
		n0 = float64(publishedPromptTokens(g.model, 0, r.Width, r.Height))
	}
	if len(osls) < 2 {
		return dc, fmt.Errorf("data-center profile %s: want two latency lines or lines with TTFT and ITL", g.key())
	}
	l := relativeLinearFit(osls, lats)
	dc.ttft = curve{a: l.a / 2, b: l.a / 2 / n0}
	dc.itl = curve{a: l.b}
	return dc, nil
}

// assumedSlowdown is how much slower than alone each token is at the
// saturating concurrency where the table does not say (no ITL).
const assumedSlowdown = 1.5

// fitLines fits each Max Throughput line: the cache holds S requests (a
// power of two, the nearest to what the published ITL at saturation
// implies), and each running request slows the others by the amount that
// makes S requests' throughput, S/((1+slow·(S−1))·latency alone), the
// published one.
func fitLines(g *dcGroup, dc DataCenter) ([]dcLine, error) {
	var lines []dcLine
	for _, r := range g.maxThr {
		if r.RequestThroughput == nil || *r.RequestThroughput <= 0 {
			return nil, fmt.Errorf("data-center profile %s: a max_throughput line without request throughput", g.key())
		}
		isl := 0
		if r.ISL != nil {
			isl = *r.ISL
		}
		n := publishedPromptTokens(g.model, isl, r.Width, r.Height)
		alone := dc.ttft.at(float64(n)) + float64(r.OSL-1)*dc.itl.at(float64(n))
		x := *r.RequestThroughput
		slowdown := assumedSlowdown
		if r.ITLMs != nil {
			slowdown = math.Max(1, *r.ITLMs/1000/dc.itl.at(float64(n)))
		}
		seqs := math.Max(2, math.Exp2(math.Round(math.Log2(x*alone*slowdown))))
		for seqs <= x*alone {
			seqs *= 2
		}
		lines = append(lines, dcLine{promptTokens: n, osl: r.OSL, seqs: seqs,
			slow: (seqs/(x*alone) - 1) / (seqs - 1)})
	}
	return lines, nil
}

// quadratic is the curve through three points.
func quadratic(x, y []float64) curve {
	// Newton's divided differences.
	d1 := (y[1] - y[0]) / (x[1] - x[0])
	d2 := (y[2] - y[1]) / (x[2] - x[1])
	c := (d2 - d1) / (x[2] - x[0])
	b := d1 - c*(x[0]+x[1])
	return curve{a: y[0] - b*x[0] - c*x[0]*x[0], b: b, c: c}
}

// twoPointShaped is a + b·(n + q·n²) through two points, q the
// reference's ratio of its quadratic to its linear term.
func twoPointShaped(x, y []float64, ref curve) curve {
	q := 0.0
	if ref.b > 0 {
		q = ref.c / ref.b
	}
	u0, u1 := x[0]+q*x[0]*x[0], x[1]+q*x[1]*x[1]
	b := (y[1] - y[0]) / (u1 - u0)
	a := y[0] - b*u0
	return curve{a: a, b: b, c: b * q}
}

// linearFit is the least-squares line a + b·x.
func linearFit(x, y []float64) curve {
	w := make([]float64, len(x))
	for i := range w {
		w[i] = 1
	}
	return weightedLinearFit(x, y, w)
}

// relativeLinearFit is the line a + b·x of the least relative squares:
// short and long answers weigh alike.
func relativeLinearFit(x, y []float64) curve {
	w := make([]float64, len(x))
	for i := range w {
		w[i] = 1 / (y[i] * y[i])
	}
	return weightedLinearFit(x, y, w)
}

func weightedLinearFit(x, y, w []float64) curve {
	var sw, sx, sy, sxx, sxy float64
	for i := range x {
		sw += w[i]
		sx += w[i] * x[i]
		sy += w[i] * y[i]
		sxx += w[i] * x[i] * x[i]
		sxy += w[i] * x[i] * y[i]
	}
	den := sw*sxx - sx*sx
	if den == 0 {
		return curve{a: sy / sw}
	}
	b := (sw*sxy - sx*sy) / den
	return curve{a: (sy - b*sx) / sw, b: b}
}

// modelImageTokens is what one image costs a data-center model in prompt
// tokens. Llama 3.2 Vision cuts the picture into tiles of 560 px, at most
// four, each encoded as 1601 tokens (40×40 patches of 14 px and a class
// token); nemoretriever-parse fits the page into 1648×2048 and reads one
// token per 32 px square.
func modelImageTokens(model string, width, height int) int {
	if width < 1 || height < 1 {
		return 0
	}
	m := strings.ToLower(model)
	if strings.Contains(m, "nemoretriever-parse") {
		s := math.Min(1, math.Min(1648/float64(width), 2048/float64(height)))
		w, h := math.Max(1, math.Round(float64(width)*s)), math.Max(1, math.Round(float64(height)*s))
		return int(math.Ceil(w/32) * math.Ceil(h/32))
	}
	tw, th := (width+559)/560, (height+559)/560
	for tw*th > 4 {
		if tw >= th {
			tw--
		} else {
			th--
		}
	}
	return tw * th * 1601
}
