package explorer

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/vlmfleet/vlmfleet/controller/explorerapi"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// RunSource gives the runs the explorer is built from (the controller's store).
type RunSource interface {
	Runs(ctx context.Context) ([]protocol.Run, error)
}

// identity is what makes a row. Simulated is part of it so that a simulated
// run never hides, or is hidden by, a real one; power (runPower) so that
// two power modes of one model on one device are two rows, never one
// run replacing, or read as a regression of, the other.
type identity struct {
	model, quant, engine, device string
	paramsB                      float64
	simulated                    bool
	power                        string
}

func identityOf(r *protocol.Run) identity {
	return identity{
		model:     strings.TrimSpace(r.Config.Model),
		paramsB:   r.Config.ParamsB,
		quant:     strings.TrimSpace(r.Config.Quantization),
		engine:    firstNonEmpty(r.Config.Engine, r.Engine.Name, r.Engine.Kind),
		device:    firstNonEmpty(r.Config.Device, r.Device.Name, r.Device.Kind),
		simulated: isSimulated(r),
		power:     runPower(r),
	}
}

// runPower is the power setting r was measured in, as shown: the job's
// mode or limit its configuration records ("15W", "300 W limit"), else
// what its device facts read: a Jetson's nvpmodel mode, a GPU host's
// limit in force; "" when unknown. A GPU host measured as found at its
// 600 W limit and one a sweep set to 600 W are in the same state: one
// configuration, one row.
func runPower(r *protocol.Run) string {
	if p := r.Config.Power().String(); p != "" {
		return p
	}
	if r.Device.Jetson != nil {
		return strings.TrimSpace(r.Device.Jetson.PowerMode)
	}
	return gpuLimitInForce(r.Device.GPUs)
}

// gpuLimitInForce is the power limit the GPUs were at when the agent read
// them, written as a sweep's limit is ("600 W limit"); "" when a GPU's is
// not known or the GPUs are at different limits.
func gpuLimitInForce(gpus []protocol.GPUFacts) string {
	var w float64
	for _, g := range gpus {
		if g.PowerLimitW <= 0 || (w != 0 && g.PowerLimitW != w) {
			return ""
		}
		w = g.PowerLimitW
	}
	return protocol.PowerSetting{LimitW: w}.String()
}

// id is stable across runs and builds: a hash of the identity's fields.
// A row without a power setting hashes as before power was part of it, so
// the ids of the runs recorded then (and the links to them) still hold.
func (k identity) id() string {
	h := sha256.New()
	fields := []string{"row/v1", k.model, strconv.FormatFloat(k.paramsB, 'g', -1, 64), k.quant, k.engine, k.device, strconv.FormatBool(k.simulated)}
	if k.power != "" {
		fields = append(fields, "power", k.power)
	}
	for _, s := range fields {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

func isSimulated(r *protocol.Run) bool {
	return r.Simulated || r.Engine.Kind == protocol.EngineSim || r.Device.Kind == protocol.DeviceSimulated
}

// runDate is when a run finished, or when it was created if it never did.
func runDate(r *protocol.Run) time.Time {
	if !r.FinishedAt.IsZero() {
		return r.FinishedAt
	}
	return r.CreatedAt
}

// Aggregate builds the explorer's dataset: one row per configuration, showing
// its latest completed run (a failed, cancelled or running run never replaces
// it; a completed run in which some combinations failed is still completed),
// with its other completed runs listed newest first in OtherRuns. Its levels
// are merged newest first (mergedPoints): each level is the newest run's
// that measured it, so that a later, coarser run never hides what an
// earlier one measured beyond it.
func Aggregate(runs []protocol.Run, now time.Time) Dataset {
	groups := map[identity][]*protocol.Run{}
	for i := range runs {
		r := &runs[i]
		// A profile run's figures are the Latency & throughput page's.
		if r.Status != protocol.RunCompleted || r.Workload.Profile != nil {
			continue
		}
		k := identityOf(r)
		if k.model == "" {
			continue
		}
		groups[k] = append(groups[k], r)
	}
	ds := Dataset{Schema: SchemaVersion, Generated: now.UTC(), Sizes: explorerapi.SizeNames(), Rows: make([]Row, 0, len(groups))}
	for k, rs := range groups {
		slices.SortFunc(rs, func(a, b *protocol.Run) int {
			if c := runDate(b).Compare(runDate(a)); c != 0 {
				return c
			}
			return strings.Compare(b.ID, a.ID)
		})
		latest := rs[0]
		row := Row{
			RowConfig: RowConfig{
				ID:           k.id(),
				Model:        k.model,
				ParamsB:      k.paramsB,
				Quantization: k.quant,
				Engine:       k.engine,
				Device:       k.device,
				Simulated:    k.simulated,
				PowerMode:    k.power,
				Source:       latest.Source,
			},
			Run:    runMeta(latest),
			Points: mergedPoints(rs),
		}
		for _, o := range rs[1:] {
			row.OtherRuns = append(row.OtherRuns, runMeta(o))
		}
		row.Explanation = Explain(row)
		if row.Simulated {
			ds.SimulatedRows++
		}
		ds.Rows = append(ds.Rows, row)
	}
	slices.SortFunc(ds.Rows, compareRows)
	return ds
}

func compareRows(a, b Row) int {
	return cmp.Or(
		strings.Compare(a.Device, b.Device),
		strings.Compare(a.Model, b.Model),
		cmp.Compare(a.ParamsB, b.ParamsB),
		strings.Compare(a.Quantization, b.Quantization),
		strings.Compare(a.Engine, b.Engine),
		strings.Compare(a.PowerMode, b.PowerMode),
		cmpBool(a.Simulated, b.Simulated),
		strings.Compare(a.ID, b.ID),
	)
}

func cmpBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case !a:
		return -1
	}
	return 1
}

// mergedPoints are the levels of rs (newest first): each level (size,
// images, cameras, frame interval, load) from the newest run that measured it,
// a level from an earlier run marked with that run's id (Point.Run).
func mergedPoints(rs []*protocol.Run) []Point {
	out := points(rs[0])
	seen := map[protocol.ComboKey]bool{}
	for _, p := range out {
		seen[p.Key()] = true
	}
	for _, r := range rs[1:] {
		for _, p := range points(r) {
			if !seen[p.Key()] {
				seen[p.Key()] = true
				p.Run = r.ID
				out = append(out, p)
			}
		}
	}
	sortPoints(out)
	return out
}

// points lists the measured combinations of r, smallest size, fewest images,
// fewest cameras and back to back before paced first. A combination in
// which every request failed is kept (Completed 0, no figures): the level
// was tested and failed, so Max Cameras must not claim "1+" below it. One
// in which no request ran, with an unknown size or listed twice is
// skipped, not trusted. A profile level answers another question (the
// Latency & throughput page's) and is no camera level.
func points(r *protocol.Run) []Point {
	out := make([]Point, 0, len(r.Combinations))
	seen := map[protocol.ComboKey]bool{}
	for i := range r.Combinations {
		c := &r.Combinations[i]
		if c.Profile != nil {
			continue
		}
		size, err := protocol.LookupImageSize(c.Size)
		if err != nil || c.Completed < 0 || c.Failed < 0 || c.Completed+c.Failed == 0 || c.Images < 1 || c.Cameras < 1 || c.FrameIntervalSec < 0 {
			continue
		}
		key := protocol.ComboKey{Size: size.Name, Images: c.Images, Cameras: c.Cameras, FrameIntervalSec: c.FrameIntervalSec, Load: c.Load}
		if seen[key] {
			continue
		}
		seen[key] = true
		out = append(out, pointOf(c, size.Name))
	}
	sortPoints(out)
	return out
}

// sortPoints orders levels smallest size, fewest images, back to back
// before paced, fewest cameras first.
func sortPoints(out []Point) {
	slices.SortFunc(out, func(a, b Point) int {
		return cmp.Or(
			cmp.Compare(protocol.SizeRank(a.Size), protocol.SizeRank(b.Size)),
			cmp.Compare(a.Images, b.Images),
			cmp.Compare(a.FrameIntervalSec, b.FrameIntervalSec),
			cmp.Compare(a.Cameras, b.Cameras),
			strings.Compare(a.Load, b.Load),
		)
	})
}

// pointOf is one combination as a point. What judging needs (the tail, the
// frames dropped) is kept even where every request failed: a level that
// answered nothing is judged, not skipped.
func pointOf(c *protocol.Combination, size string) Point {
	p := Point{Size: size, Images: c.Images, Cameras: c.Cameras, Failed: c.Failed,
		FrameIntervalSec: c.FrameIntervalSec, Search: c.Search, Load: c.Load, Tail: c.Tail}
	if g := c.Pacing; g != nil {
		p.FramesDue, p.FramesSent, p.FramesDropped = g.FramesDue, g.FramesSent, g.FramesDropped
	}
	pointEnergy(&p, c)
	if c.Completed == 0 {
		// The means of no request are not figures: leave them zero.
		p.Error = mostFrequentError(c.Errors)
		return p
	}
	p.TTFT, p.TTFTP90, p.TPS = c.TTFT.Mean, c.TTFT.P90, c.TPS.Mean
	p.Completed, p.Throughput = c.Completed, c.OutputTokensPerSec
	// N 0 is the protocol's "not measurable"; a mean without N is an older
	// document's, kept as the figure it states.
	p.TPSUnmeasured = c.TPS.N == 0 && c.TPS.Mean == 0
	return p
}

func firstNonEmpty(ss ...string) string {
	for _, s := range ss {
		if s = strings.TrimSpace(s); s != "" {
			return s
		}
	}
	return ""
}

// mostFrequentError is the error most requests of a combination failed with.
func mostFrequentError(errs []protocol.ErrorCount) string {
	best := protocol.ErrorCount{}
	for _, e := range errs {
		if e.Count > best.Count {
			best = e
		}
	}
	return best.Error
}
