package power

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/vlmfleet/vlmfleet/agent/devicefacts/nvsmi"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// GPUOptions make a GPU power-limit switcher.
type GPUOptions struct {
	// SMI is the nvidia-smi executable.
	SMI string
	// GPUs are the indices of the GPUs the engines use; none: all.
	GPUs []int
	// Helper switches; nil: this agent may not, for Reason.
	Helper Privileged
	Reason string
}

// GPU reads and sets the power limit of an NVIDIA host's GPUs.
type GPU struct{ opt GPUOptions }

// NewGPU makes the switcher.
func NewGPU(opt GPUOptions) *GPU { return &GPU{opt: opt} }

// gpuLimits are one GPU's power limits, watts.
type gpuLimits struct {
	index               int
	limit, lower, upper float64
}

var limitFields = []string{"index", "power.limit", "power.min_limit", "power.max_limit"}

// limits reads the limits of the GPUs the switcher applies to.
func (g *GPU) limits(ctx context.Context) ([]gpuLimits, error) {
	qctx, cancel := context.WithTimeout(ctx, queryTimeout)
	defer cancel()
	rows, err := nvsmi.Query(qctx, g.opt.SMI, limitFields)
	if err != nil {
		return nil, fmt.Errorf("read the GPU power limits: %w", err)
	}
	var out []gpuLimits
	for _, r := range rows {
		var l gpuLimits
		var err error
		if l.index, err = strconv.Atoi(r[0]); err != nil {
			return nil, fmt.Errorf("read the GPU power limits: index %q is not a number", r[0])
		}
		if len(g.opt.GPUs) > 0 && !slices.Contains(g.opt.GPUs, l.index) {
			continue
		}
		for i, p := range []*float64{&l.limit, &l.lower, &l.upper} {
			v, err := strconv.ParseFloat(r[i+1], 64)
			if err != nil || nvsmi.Unavailable(r[i+1]) || math.IsNaN(v) || v <= 0 {
				return nil, fmt.Errorf("GPU %d: %s is %q; this GPU's power limit cannot be read or set", l.index, limitFields[i+1], r[i+1])
			}
			*p = v
		}
		out = append(out, l)
	}
	for _, want := range g.opt.GPUs {
		if !slices.ContainsFunc(out, func(l gpuLimits) bool { return l.index == want }) {
			return nil, fmt.Errorf("power.gpus names GPU %d; nvidia-smi lists no such GPU", want)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("read the GPU power limits: nvidia-smi lists no GPU")
	}
	return out, nil
}

// Control is the limit in force and the range every GPU allows.
func (g *GPU) Control(ctx context.Context) (protocol.PowerControl, error) {
	pc := protocol.PowerControl{Switchable: g.opt.Helper != nil, Reason: g.opt.Reason}
	ls, err := g.limits(ctx)
	if err != nil {
		return pc, err
	}
	pc.LimitW, pc.MinLimitW, pc.MaxLimitW = ls[0].limit, ls[0].lower, ls[0].upper
	for _, l := range ls[1:] {
		pc.LimitW = min(pc.LimitW, l.limit)
		pc.MinLimitW = max(pc.MinLimitW, l.lower)
		pc.MaxLimitW = min(pc.MaxLimitW, l.upper)
	}
	return pc, nil
}

// Current is the limit in force. GPUs set to different limits are an
// error: the agent restores one limit to all of them, and would lose the
// difference.
func (g *GPU) Current(ctx context.Context) (protocol.PowerSetting, error) {
	ls, err := g.limits(ctx)
	if err != nil {
		return protocol.PowerSetting{}, err
	}
	for _, l := range ls[1:] {
		if math.Abs(l.limit-ls[0].limit) > 0.5 {
			return protocol.PowerSetting{}, fmt.Errorf("GPU %d has a power limit of %g W and GPU %d of %g W; the agent would restore one limit to both: set them alike (nvidia-smi -pl) or name the GPUs the engines use in power.gpus",
				ls[0].index, ls[0].limit, l.index, l.limit)
		}
	}
	return protocol.PowerSetting{LimitW: ls[0].limit}, nil
}

// Set sets every GPU's limit to s.LimitW, within the range each allows.
func (g *GPU) Set(ctx context.Context, s protocol.PowerSetting) error {
	if s.Mode != "" || s.LimitW <= 0 {
		return fmt.Errorf("power %q: a GPU host takes a power limit in watts, not a mode", s)
	}
	if g.opt.Helper == nil {
		return fmt.Errorf("power limit %g W: this agent may not switch: %s", s.LimitW, g.opt.Reason)
	}
	ls, err := g.limits(ctx)
	if err != nil {
		return err
	}
	w := strconv.FormatFloat(s.LimitW, 'f', -1, 64)
	var todo []string
	for _, l := range ls {
		if s.LimitW < l.lower || s.LimitW > l.upper {
			return fmt.Errorf("power limit %g W: GPU %d allows %g-%g W", s.LimitW, l.index, l.lower, l.upper)
		}
		if math.Abs(l.limit-s.LimitW) > 0.5 {
			todo = append(todo, strconv.Itoa(l.index))
		}
	}
	for _, idx := range todo {
		if err := g.opt.Helper.Do(ctx, "limit", w, idx); err != nil {
			return fmt.Errorf("set GPU %s's power limit to %s W: %w", idx, w, err)
		}
	}
	return g.check(ctx, s.LimitW)
}

// check reads the limits back: nvidia-smi -pl takes effect at once.
func (g *GPU) check(ctx context.Context, w float64) error {
	ls, err := g.limits(ctx)
	if err != nil {
		return err
	}
	var off []string
	for _, l := range ls {
		if math.Abs(l.limit-w) > 0.5 {
			off = append(off, fmt.Sprintf("GPU %d at %g W", l.index, l.limit))
		}
	}
	if len(off) > 0 {
		return fmt.Errorf("set the power limit to %g W, but nvidia-smi reads %s", w, strings.Join(off, ", "))
	}
	return nil
}
