// Package fakehw builds fake tegrastats, nvidia-smi and nvpmodel executables
// for tests, and fixture system roots for an Orin NX, an AGX Orin and an
// x86 workstation. The fakes honour the real tools' flags and print their
// output formats; what they print comes from a fakehw.json file next to
// them, so each test installs its own scenario.
package fakehw

import (
	"embed"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/vlmfleet/vlmfleet/protocol"
)

// ConfigFile is the scenario file the fakes read from their own directory.
const ConfigFile = "fakehw.json"

// Tools are the names the fake answers to.
func Tools() []string { return []string{"tegrastats", "nvidia-smi", "nvpmodel"} }

// Config is one scenario. A nil section means that tool is not installed.
type Config struct {
	Tegrastats *Tegrastats `json:"tegrastats,omitempty"`
	SMI        *SMI        `json:"nvidia_smi,omitempty"`
	NVPModel   *NVPModel   `json:"nvpmodel,omitempty"`
}

// Tegrastats prints Lines in turn, one per interval, cycling.
type Tegrastats struct {
	Lines []string `json:"lines"`
	// ExitAfter makes it crash (exit 1) after that many lines; 0 never.
	ExitAfter int `json:"exit_after,omitempty"`
}

// SMI describes the driver and its GPUs.
type SMI struct {
	Driver string `json:"driver"`
	CUDA   string `json:"cuda"`
	// Unsupported fields fail the whole query like an older driver does.
	Unsupported []string `json:"unsupported,omitempty"`
	// GPUs hold each GPU's values by field name, as printed with nounits;
	// a known field without a value prints "[N/A]".
	GPUs []map[string]string `json:"gpus"`
	// ExitAfter makes a looping query crash after that many ticks; 0 never.
	ExitAfter int `json:"exit_after,omitempty"`
}

// NVPModel answers `nvpmodel -q` and switches with `nvpmodel -m ID`: the
// mode it switched to is kept in NVPModelState next to it, and every
// switch is appended to NVPModelLog ("-m 2 15W"), so a test sees each.
type NVPModel struct {
	// Mode and ID are the mode before any switch.
	Mode string `json:"mode"`
	ID   int    `json:"id"`
	// Modes are what -m switches among; none: -m fails.
	Modes []protocol.PowerMode `json:"modes,omitempty"`
	// MaxFreqFile is the GPU devfreq max_freq file -m writes the mode's
	// cap to (UncappedHz for a mode without one); "" none.
	MaxFreqFile string `json:"max_freq_file,omitempty"`
	UncappedHz  int64  `json:"uncapped_hz,omitempty"`
	// FailIDs fail -m (exit 1, the mode unchanged); RebootIDs ask for a
	// reboot first and switch only when answered yes.
	FailIDs   []int `json:"fail_ids,omitempty"`
	RebootIDs []int `json:"reboot_ids,omitempty"`
}

// Files the fakes keep next to themselves: the state they were switched
// to and the log of every switch.
const (
	NVPModelState = "nvpmodel.state"
	NVPModelLog   = "nvpmodel.log"
	SMIState      = "nvidia-smi.limits"
	SMILog        = "nvidia-smi.log"
)

// Build compiles the fake into dir and returns its path. Tests call it once
// (in TestMain) and Install copies of it per scenario.
func Build(dir string) (string, error) {
	// go test puts its own toolchain first on PATH, so this is the go that
	// runs the tests.
	goBin, err := exec.LookPath("go")
	if err != nil {
		return "", fmt.Errorf("build fake tools: %w", err)
	}
	out := filepath.Join(dir, "fakehw")
	cmd := exec.Command(goBin, "build", "-o", out, "github.com/vlmfleet/vlmfleet/agent/devicefacts/fakehw/cmd/fakehw")
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build fake tools: %w: %s", err, b)
	}
	return out, nil
}

// Install puts the tools cfg enables into dir (as links to, or copies of,
// binary) with the scenario file, so dir can go first on a PATH.
func Install(dir, binary string, cfg Config) error {
	b, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return fmt.Errorf("encode fake scenario: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, ConfigFile), b, 0o644); err != nil {
		return fmt.Errorf("write fake scenario: %w", err)
	}
	want := map[string]bool{"tegrastats": cfg.Tegrastats != nil, "nvidia-smi": cfg.SMI != nil, "nvpmodel": cfg.NVPModel != nil}
	for _, name := range Tools() {
		if !want[name] {
			continue
		}
		dst := filepath.Join(dir, name)
		if err := os.Link(binary, dst); err == nil {
			continue
		}
		if err := copyFile(binary, dst); err != nil {
			return fmt.Errorf("install fake %s: %w", name, err)
		}
	}
	return nil
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

//go:embed all:testdata/sysroot
var sysroots embed.FS

// Sysroots lists the fixture system roots.
func Sysroots() []string { return []string{"orin-nx", "agx-orin", "x86-workstation"} }

// WriteSysroot copies the fixture system root name into dir, so a test can
// change files (an over-current counter) without touching the fixtures.
func WriteSysroot(name, dir string) error {
	root := "testdata/sysroot/" + name
	if _, err := fs.Stat(sysroots, root); err != nil {
		return fmt.Errorf("no fixture system root %q (have %v): %w", name, Sysroots(), err)
	}
	return fs.WalkDir(sysroots, root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		dst := filepath.Join(dir, rel)
		if d.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		b, err := sysroots.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(dst, b, 0o644)
	})
}
