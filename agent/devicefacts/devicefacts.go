// Package devicefacts detects the device an agent measures on: a Jetson
// (device tree, L4T release, nvpmodel, clocks), NVIDIA GPUs (nvidia-smi) and
// the host (gopsutil). Facts that cannot be read become Warnings; detection
// never fails, because a result with partial facts beats no result.
package devicefacts

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/vlmfleet/vlmfleet/protocol"
)

// DefaultSysRoot is the system root of a real device, which an empty
// SysRoot means here and in package telemetry.
const DefaultSysRoot = "/"

// SysRootOr returns root, or DefaultSysRoot when root is empty, for callers
// that show or pass on the root they will read.
func SysRootOr(root string) string {
	if root == "" {
		return DefaultSysRoot
	}
	return root
}

// Options says where to read from. Both places come from the caller alone,
// never from this process's environment, so that a caller (a test, the CLI
// with its own environment) decides what is read and run.
type Options struct {
	// SysRoot prefixes every file read; "" means DefaultSysRoot.
	SysRoot string
	// Path is the PATH-style list searched for nvidia-smi and nvpmodel;
	// "" searches nowhere, so no tool is found.
	Path string
	// Timeout bounds each external command (default 10s): nvidia-smi can
	// hang on a wedged GPU.
	Timeout time.Duration
}

func (o Options) withDefaults() Options {
	o.SysRoot = SysRootOr(o.SysRoot)
	if o.Timeout <= 0 {
		o.Timeout = 10 * time.Second
	}
	return o
}

// Detect reads what it can; facts it cannot read become Warnings.
func Detect(ctx context.Context, opt Options) protocol.DeviceFacts {
	opt = opt.withDefaults()
	var f protocol.DeviceFacts
	warn := func(format string, args ...any) { f.Warnings = append(f.Warnings, fmt.Sprintf(format, args...)) }

	var hw []string
	f.Host, hw = hostFacts(ctx)
	f.Warnings = append(f.Warnings, hw...)

	if model, ok := JetsonModel(opt.SysRoot); ok {
		j, jw := jetsonFacts(ctx, opt, model)
		f.Warnings = append(f.Warnings, jw...)
		f.Kind = protocol.DeviceJetson
		f.Jetson = &j
		f.Name = JetsonDisplayName(model)
		return f
	}

	gpus, gw := gpuFacts(ctx, opt)
	f.Warnings = append(f.Warnings, gw...)
	if len(gpus) > 0 {
		f.Kind = protocol.DeviceDGPU
		f.GPUs = gpus
		// The explorer groups by one device name; a multi-GPU host is named
		// for its first GPU and lists all of them in GPUs.
		f.Name = GPUDisplayName(gpus[0].Name, gpus[0].MaxPowerLimitW)
		return f
	}
	f.Kind = protocol.DeviceCPU
	f.Name = f.Host.CPUModel
	if f.Name == "" {
		f.Name = f.Host.Hostname
	}
	if f.Name == "" {
		warn("no name for this device: no Jetson, no NVIDIA GPU, no CPU model")
		f.Name = "unknown " + f.Host.Arch
	}
	return f
}

// JetsonModel reads the device tree model under sysRoot and reports whether
// it names a Jetson. An L4T release file without a device tree also counts,
// as in some containers that bind-mount /etc but not /proc.
func JetsonModel(sysRoot string) (string, bool) {
	b, err := os.ReadFile(rooted(sysRoot, "/proc/device-tree/model"))
	model := strings.TrimSpace(strings.TrimRight(string(b), "\x00"))
	if err == nil && strings.Contains(strings.ToLower(model), "jetson") {
		return model, true
	}
	if _, err := os.Stat(rooted(sysRoot, "/etc/nv_tegra_release")); err == nil {
		return model, true
	}
	return model, false
}

// LookPath finds an executable named name in the PATH-style list pathList,
// so tests can put fake tools first without touching the process's PATH.
// Empty and relative entries (".", "bin") are skipped: they name the
// working directory, where nvidia-smi or tegrastats could be anyone's.
func LookPath(pathList, name string) (string, error) {
	for _, dir := range filepath.SplitList(pathList) {
		if dir == "" || !filepath.IsAbs(dir) {
			continue
		}
		p := filepath.Join(dir, name)
		st, err := os.Stat(p)
		if err != nil || !st.Mode().IsRegular() || st.Mode().Perm()&0o111 == 0 {
			continue
		}
		abs, err := filepath.Abs(p)
		if err != nil {
			return "", fmt.Errorf("look for %s: %w", name, err)
		}
		return abs, nil
	}
	return "", fmt.Errorf("%s not found on PATH: %w", name, fs.ErrNotExist)
}

// rooted places an absolute system path under root.
func rooted(root, path string) string {
	if root == "" || root == DefaultSysRoot {
		return path
	}
	return filepath.Join(root, path)
}

// readTrimmed reads a small text file under root.
func readTrimmed(root, path string) (string, error) {
	b, err := os.ReadFile(rooted(root, path))
	if err != nil {
		return "", fmt.Errorf("read %s: %w", rooted(root, path), err)
	}
	return strings.TrimSpace(strings.TrimRight(string(b), "\x00")), nil
}
