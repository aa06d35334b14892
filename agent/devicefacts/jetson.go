package devicefacts

import (
	"bufio"
	"context"
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/vlmfleet/vlmfleet/agent/devicefacts/nvsmi"
	"github.com/vlmfleet/vlmfleet/protocol"
)

func jetsonFacts(ctx context.Context, opt Options, model string) (protocol.JetsonFacts, []string) {
	var warnings []string
	warn := func(format string, args ...any) { warnings = append(warnings, fmt.Sprintf(format, args...)) }
	j := protocol.JetsonFacts{Model: model}
	if model == "" {
		warn("no Jetson model in %s", rooted(opt.SysRoot, "/proc/device-tree/model"))
	}

	if rel, err := readTrimmed(opt.SysRoot, "/etc/nv_tegra_release"); err != nil {
		warn("L4T release unknown: %v", err)
	} else if l4t, err := ParseTegraRelease(rel); err != nil {
		warn("L4T release unknown: %s: %v", rooted(opt.SysRoot, "/etc/nv_tegra_release"), err)
	} else {
		j.L4T = l4t
		jp, exact := JetPackFor(l4t)
		j.JetPack = jp
		switch {
		case jp == "":
			warn("L4T %s is not in the JetPack table", l4t)
		case !exact:
			warn("L4T %s is not in the JetPack table; JetPack %s guessed from its release family", l4t, jp)
		}
	}

	if bin, err := LookPath(opt.Path, "nvpmodel"); err != nil {
		warn("power mode unknown: %v", err)
	} else {
		cctx, cancel := context.WithTimeout(ctx, opt.Timeout)
		out, err := nvsmi.Command(cctx, bin, "-q")
		cancel()
		if err != nil {
			warn("power mode unknown: %v", err)
		} else if mode, _, ok := ParseNVPModel(string(out)); ok {
			j.PowerMode = mode
		} else {
			warn("power mode unknown: no \"NV Power Mode:\" line in nvpmodel -q output")
		}
	}

	if pinned, err := clocksPinned(opt.SysRoot); err != nil {
		warn("whether jetson_clocks pins the clocks is unknown: %v", err)
	} else {
		j.ClocksPinned = &pinned
	}

	if mb, err := memTotalMB(opt.SysRoot); err != nil {
		warn("memory size unknown: %v", err)
	} else {
		j.MemoryMB = mb
	}
	return j, warnings
}

// ParseTegraRelease turns /etc/nv_tegra_release ("# R36 (release),
// REVISION: 4.3, GCID: ...") into an L4T version ("36.4.3"). A two-part
// revision gets ".0" when it has one part ("REVISION: 6.0" is 35.6.0).
func ParseTegraRelease(s string) (string, error) {
	m := regexp.MustCompile(`#\s*R(\d+)\s*\([^)]*\),\s*REVISION:\s*(\d+)(?:\.(\d+))?`).FindStringSubmatch(s)
	if m == nil {
		return "", fmt.Errorf("no \"# R<major> (release), REVISION: <minor>.<patch>\" line in %q", firstLine(s))
	}
	patch := m[3]
	if patch == "" {
		patch = "0"
	}
	return m[1] + "." + m[2] + "." + patch, nil
}

// ParseNVPModel reads `nvpmodel -q` output ("NV Power Mode: MAXN\n0"): the
// mode name and, on the following line, its number (-1 when absent).
func ParseNVPModel(s string) (mode string, id int, ok bool) {
	id = -1
	sc := bufio.NewScanner(strings.NewReader(s))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if after, found := strings.CutPrefix(line, "NV Power Mode:"); found {
			mode = strings.TrimSpace(after)
			ok = mode != ""
			if sc.Scan() {
				if n, err := strconv.Atoi(strings.TrimSpace(sc.Text())); err == nil {
					id = n
				}
			}
			return mode, id, ok
		}
	}
	return "", -1, false
}

// clocksPinned is the jetson_clocks heuristic: jetson_clocks raises every
// CPU core's scaling_min_freq to its scaling_max_freq (and the GPU devfreq
// min_freq to max_freq), so min == max means pinned. A user who lowered
// max_freq by hand also reads as pinned; that is rare and harmless here.
// The GPU is checked where its devfreq node exists (17000000.gpu on
// JetPack 6, 17000000.ga10b on JetPack 5).
func clocksPinned(root string) (bool, error) {
	cpuPinned, err := minEqualsMax(root,
		"/sys/devices/system/cpu/cpu0/cpufreq/scaling_min_freq",
		"/sys/devices/system/cpu/cpu0/cpufreq/scaling_max_freq")
	if err != nil {
		return false, err
	}
	gpuDirs, _ := filepath.Glob(rooted(root, "/sys/class/devfreq/17000000.*"))
	for _, dir := range gpuDirs {
		rel := strings.TrimPrefix(dir, strings.TrimSuffix(rooted(root, "/"), "/"))
		gpuPinned, err := minEqualsMax(root, rel+"/min_freq", rel+"/max_freq")
		if err == nil {
			return cpuPinned && gpuPinned, nil
		}
	}
	return cpuPinned, nil
}

func minEqualsMax(root, minPath, maxPath string) (bool, error) {
	lo, err := readTrimmed(root, minPath)
	if err != nil {
		return false, err
	}
	hi, err := readTrimmed(root, maxPath)
	if err != nil {
		return false, err
	}
	a, err1 := strconv.ParseInt(lo, 10, 64)
	b, err2 := strconv.ParseInt(hi, 10, 64)
	if err1 != nil || err2 != nil {
		return false, fmt.Errorf("%s=%q, %s=%q: want integers (kHz)", minPath, lo, maxPath, hi)
	}
	return a == b, nil
}

// memTotalMB reads MemTotal from /proc/meminfo (kB) as MiB, which is what
// tegrastats prints as the RAM total.
func memTotalMB(root string) (int, error) {
	s, err := readTrimmed(root, "/proc/meminfo")
	if err != nil {
		return 0, err
	}
	kb, err := ParseMemTotalKB(s)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", rooted(root, "/proc/meminfo"), err)
	}
	return int(kb / 1024), nil
}

// ParseMemTotalKB finds "MemTotal: N kB" in /proc/meminfo text.
func ParseMemTotalKB(s string) (int64, error) {
	for _, line := range strings.Split(s, "\n") {
		if after, ok := strings.CutPrefix(line, "MemTotal:"); ok {
			f := strings.Fields(after)
			if len(f) == 0 {
				break
			}
			n, err := strconv.ParseInt(f[0], 10, 64)
			if err != nil || n < 0 {
				return 0, fmt.Errorf("MemTotal %q is not a number of kB", f[0])
			}
			return n, nil
		}
	}
	return 0, fmt.Errorf("no MemTotal line")
}

// JetsonDisplayName turns a device tree model into the name the explorer
// shows: "NVIDIA Jetson Orin NX Engineering Reference Developer Kit" is
// "Jetson Orin NX" whatever its memory size.
func JetsonDisplayName(model string) string {
	low := strings.ToLower(model)
	for _, n := range []struct{ key, name string }{
		{"agx thor", "Jetson AGX Thor"},
		{"agx orin", "Jetson AGX Orin"},
		{"orin nx", "Jetson Orin NX"},
		{"orin nano", "Jetson Orin Nano"},
		{"agx xavier", "Jetson AGX Xavier"},
		{"xavier nx", "Jetson Xavier NX"},
		{"tx2", "Jetson TX2"},
		{"nano", "Jetson Nano"},
	} {
		if strings.Contains(low, n.key) {
			return n.name
		}
	}
	name := strings.TrimPrefix(model, "NVIDIA ")
	for _, suffix := range []string{" Engineering Reference Developer Kit", " Developer Kit"} {
		name = strings.TrimSuffix(name, suffix)
	}
	if name == "" {
		return "Jetson"
	}
	return name
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	if len(line) > 120 {
		line = line[:120] + "..."
	}
	return line
}
