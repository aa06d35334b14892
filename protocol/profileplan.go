package protocol

import "sort"

// Defaults of a profile workload (DefaultProfileWorkload): the seed page's
// first table, ISL 1000 / OSL 1000 at 1120x1120 in PNG with one image,
// streamed, at concurrency 1 up to the level that saturates.
const (
	// DefaultProfileAutoCeiling is the highest level the automatic rule
	// measures when no ceiling is named.
	DefaultProfileAutoCeiling = 256
	// DefaultProfileMinRequests is the fewest measured requests of a level
	// whose requests_per_level is left at 0 (AIPerf's default, max(10, 2 ×
	// concurrency)): ten answers of ISL 60000 / OSL 2000 at concurrency 1
	// take minutes on a data-center GPU, not hours.
	DefaultProfileMinRequests = 10
)

// DefaultProfile is the seed page's first table as a profile: ISL 1000 /
// OSL 1000, one PNG of 1120x1120 per request, concurrency doubled from 1
// by the automatic rule up to DefaultProfileAutoCeiling, streamed, each
// level's requests by the default rule (RequestsPerLevel 0), one warm-up.
func DefaultProfile() ProfileWorkload {
	return ProfileWorkload{
		Lengths:          []LengthPair{{ISL: 1000, OSL: 1000}},
		Resolutions:      []Resolution{{Width: 1120, Height: 1120}},
		ImageFormat:      ImageFormatPNG,
		ImagesPerRequest: 1,
		AutoCeiling:      DefaultProfileAutoCeiling,
		WarmupRequests:   1,
	}
}

// DefaultProfileWorkload is a workload that measures DefaultProfile: the
// camera ladders' fields are left empty, as Validate asks of a profile,
// and those both share (prompt, timeout, cache switches, pictures) are
// the method's.
func DefaultProfileWorkload() Workload {
	d := DefaultWorkload()
	p := DefaultProfile()
	return Workload{
		Prompt:            d.Prompt,
		RequestTimeoutSec: d.RequestTimeoutSec,
		CachePrompt:       d.CachePrompt,
		ImageSet:          d.ImageSet,
		Profile:           &p,
	}
}

// Auto says that the automatic rule (ProfileAutoRule) chooses the levels.
func (p ProfileWorkload) Auto() bool { return len(p.Concurrency) == 0 }

// Levels are the concurrency levels measured, lowest first: the listed
// ones, or with the automatic rule every level it may reach, doubling
// from 1 and capped at the ceiling (a ceiling of 100: 1, 2, ..., 64, 100).
// The rule stops before the last when the throughput stops growing.
func (p ProfileWorkload) Levels() []int {
	if !p.Auto() {
		out := append([]int(nil), p.Concurrency...)
		sort.Ints(out)
		return out
	}
	var out []int
	for c := 1; c <= p.AutoCeiling && c > 0; c *= 2 {
		out = append(out, c)
		if c > p.AutoCeiling/2 && c < p.AutoCeiling {
			out = append(out, p.AutoCeiling)
		}
	}
	return out
}

// levelCount is len(Levels()) without copying a listed workload's levels,
// for one not yet checked (its lists may be as long as a message holds);
// the automatic rule's levels are at most one per bit of an int.
func (p ProfileWorkload) levelCount() int {
	if !p.Auto() {
		return len(p.Concurrency)
	}
	return len(p.Levels())
}

// LevelRequests is the measured requests of a level: RequestsPerLevel
// when set (at least one a client, or the level would never have as many
// in flight), else max(DefaultProfileMinRequests, 2 × concurrency).
func (p ProfileWorkload) LevelRequests(concurrency int) int {
	if p.RequestsPerLevel > 0 {
		return max(p.RequestsPerLevel, concurrency)
	}
	return max(DefaultProfileMinRequests, 2*concurrency)
}

// plan lists a profile's levels: each length pair, at each resolution, at
// each level lowest first. A level's key is its "WxH" as Size, its
// concurrency as Cameras, its images per request and its ISL and OSL.
func (p ProfileWorkload) plan() []PlannedCombo {
	levels := p.Levels()
	var out []PlannedCombo
	for _, l := range p.Lengths {
		for _, r := range p.Resolutions {
			for _, c := range levels {
				k := ComboKey{Size: r.String(), Images: p.ImagesPerRequest, Cameras: c, ISL: l.ISL, OSL: l.OSL}
				out = append(out, PlannedCombo{ComboKey: k, Requests: p.LevelRequests(c)})
			}
		}
	}
	return out
}

// plannedCombinations is len(plan()) from the lists' lengths.
func (p ProfileWorkload) plannedCombinations() int {
	return mulSat(mulSat(len(p.Lengths), len(p.Resolutions)), p.levelCount())
}
