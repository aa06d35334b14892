package telemetry

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/shirou/gopsutil/v4/cpu"
	"github.com/shirou/gopsutil/v4/mem"
	"github.com/shirou/gopsutil/v4/process"
	"github.com/vlmfleet/vlmfleet/agent/devicefacts/nvsmi"
	"github.com/vlmfleet/vlmfleet/protocol"
)

const maxRestartDelay = 30 * time.Second

// runState is what one Run remembers between samples: the previous CPU
// times (host and agent) for percentages and the over-current counters.
type runState struct {
	s        *Sampler
	hostPrev *cpu.TimesStat
	proc     *process.Process
	procCPU  float64
	procAt   time.Time
	ocPrev   map[string]int64
}

func newRunState(ctx context.Context, s *Sampler) *runState {
	r := &runState{s: s, ocPrev: map[string]int64{}}
	if t, err := cpu.TimesWithContext(ctx, false); err == nil && len(t) > 0 {
		r.hostPrev = &t[0]
	}
	if p, err := process.NewProcessWithContext(ctx, int32(os.Getpid())); err == nil {
		r.proc = p
		if t, err := p.TimesWithContext(ctx); err == nil {
			r.procCPU, r.procAt = t.User+t.System, time.Now()
		}
	}
	if s.source == SourceTegrastats {
		r.readOverCurrent()
	}
	return r
}

// augment stamps the sample with the time it arrived (tegrastats prints
// whole seconds only) and adds the host CPU and memory, the agent's own
// cost and, on a Jetson, over-current events.
func (r *runState) augment(ctx context.Context, smp *protocol.TelemetrySample) {
	smp.Time = time.Now()
	if smp.Extra == nil {
		smp.Extra = map[string]float64{}
	}
	if t, err := cpu.TimesWithContext(ctx, false); err == nil && len(t) > 0 {
		if r.hostPrev != nil && smp.CPUUtil == nil {
			u := busyPercent(*r.hostPrev, t[0])
			smp.CPUUtil = &u
		}
		r.hostPrev = &t[0]
	}
	if vm, err := mem.VirtualMemoryWithContext(ctx); err == nil {
		used, total := float64(vm.Used)/(1<<20), float64(vm.Total)/(1<<20)
		smp.Extra["host_mem_used_mb"], smp.Extra["host_mem_total_mb"] = used, total
		if r.s.source == SourceHost {
			// With no GPU, RAM is the memory an engine fills.
			smp.MemUsedMB, smp.MemTotalMB = &used, &total
		}
	}
	if r.proc != nil {
		now := time.Now()
		if t, err := r.proc.TimesWithContext(ctx); err == nil {
			c := t.User + t.System
			if wall := now.Sub(r.procAt).Seconds(); !r.procAt.IsZero() && wall > 0 {
				// Percent of one core, as top shows it.
				pct := max(0, (c-r.procCPU)/wall*100)
				smp.AgentCPU = &pct
			}
			r.procCPU, r.procAt = c, now
		}
		if m, err := r.proc.MemoryInfoWithContext(ctx); err == nil {
			rss := float64(m.RSS) / (1 << 20)
			smp.AgentRSSMB = &rss
		}
	}
	if r.s.source == SourceTegrastats && r.readOverCurrent() {
		smp.Throttle = appendOnce(smp.Throttle, ThrottleOverCurrent)
	}
	if len(smp.Extra) == 0 {
		smp.Extra = nil
	}
}

// readOverCurrent reads the Jetson over-current event counters
// (<SysRoot>/sys/class/hwmon/hwmon*/oc*_event_cnt) and reports whether any
// rose since the last read.
func (r *runState) readOverCurrent() bool {
	files, _ := filepath.Glob(filepath.Join(r.s.opt.SysRoot, "sys/class/hwmon/hwmon*/oc*_event_cnt"))
	rose := false
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		if err != nil {
			continue
		}
		if prev, ok := r.ocPrev[f]; ok && n > prev {
			rose = true
		}
		r.ocPrev[f] = n
	}
	return rose
}

func busyPercent(a, b cpu.TimesStat) float64 {
	total := func(t cpu.TimesStat) float64 {
		return t.User + t.System + t.Idle + t.Nice + t.Iowait + t.Irq + t.Softirq + t.Steal
	}
	dt := total(b) - total(a)
	if dt <= 0 {
		return 0
	}
	idle := (b.Idle + b.Iowait) - (a.Idle + a.Iowait)
	return min(100, max(0, (dt-idle)/dt*100))
}

func appendOnce(list []string, v string) []string {
	for _, x := range list {
		if x == v {
			return list
		}
	}
	return append(list, v)
}

// runNvidiaSMI probes the fields, then runs the looping query and turns
// each tick's per-GPU lines into one sample.
func (r *runState) runNvidiaSMI(ctx context.Context, emit func(protocol.TelemetrySample)) error {
	pctx, cancel := context.WithTimeout(ctx, r.s.opt.ProbeTimeout)
	fields, gpus, err := nvsmi.Probe(pctx, r.s.bin, smiFields(), smiAlternatives())
	cancel()
	if err != nil {
		return fmt.Errorf("telemetry: probe nvidia-smi fields: %w", err)
	}
	if len(fields) < len(smiFields()) {
		r.s.opt.Log.Info().Strs("fields", fields).Msg("telemetry: nvidia-smi answers only some fields")
	}
	args := append(nvsmi.QueryArgs(fields), "-lms", strconv.FormatInt(r.s.opt.Interval.Milliseconds(), 10))
	var batch []protocol.TelemetrySample
	seen := map[float64]bool{}
	flush := func() {
		if len(batch) > 0 {
			emit(CombineGPUs(batch))
		}
		batch, seen = nil, map[float64]bool{}
	}
	bad := 0
	r.runTool(ctx, r.s.bin, args, func(line string) {
		if strings.TrimSpace(line) == "" {
			return
		}
		smp, err := ParseNvidiaSMI(fields, line)
		if err != nil {
			bad++
			if bad == 1 || bad%100 == 0 {
				r.s.opt.Log.Warn().Err(err).Int("bad_lines", bad).Msg("telemetry: skipping an nvidia-smi line")
			}
			return
		}
		idx, hasIdx := smp.Extra["gpu_index"]
		if hasIdx && seen[idx] {
			flush() // a GPU repeats: the previous tick is complete
		}
		seen[idx] = true
		batch = append(batch, smp)
		if len(batch) >= max(gpus, 1) {
			flush()
		}
	})
	return nil
}

// runTool runs a sampling tool and feeds its stdout lines to onLine,
// restarting it with backoff whenever it exits, until ctx ends.
func (r *runState) runTool(ctx context.Context, bin string, args []string, onLine func(string)) {
	delay := r.s.opt.RestartDelay
	for {
		lines, err := runOnce(ctx, bin, args, onLine)
		if ctx.Err() != nil {
			return
		}
		if lines > 0 {
			delay = r.s.opt.RestartDelay
		}
		r.s.opt.Log.Warn().Err(err).Str("tool", filepath.Base(bin)).Int("lines", lines).
			Dur("restart_in", delay).Msg("telemetry: sampling tool exited; restarting")
		select {
		case <-ctx.Done():
			return
		case <-time.After(delay):
		}
		delay = min(delay*2, maxRestartDelay)
	}
}

// runOnce runs bin once, returning how many lines it printed and why it
// stopped (with the tail of its stderr).
func runOnce(ctx context.Context, bin string, args []string, onLine func(string)) (int, error) {
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 2 * time.Second
	stderr := &tailBuffer{max: 2048}
	cmd.Stderr = stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return 0, fmt.Errorf("start %s: %w", bin, err)
	}
	if err := cmd.Start(); err != nil {
		return 0, fmt.Errorf("start %s: %w", bin, err)
	}
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	lines := 0
	for sc.Scan() {
		lines++
		onLine(sc.Text())
	}
	scanErr := sc.Err()
	err = cmd.Wait()
	if err == nil {
		err = scanErr
	}
	if err == nil {
		err = fmt.Errorf("%s exited", filepath.Base(bin))
	}
	if tail := strings.TrimSpace(stderr.String()); tail != "" {
		err = fmt.Errorf("%w: %s", err, tail)
	}
	return lines, err
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = t.b[len(t.b)-t.max:]
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}
