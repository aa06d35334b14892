package power

import (
	"bufio"
	"bytes"
	"fmt"
	"strconv"
	"strings"

	"github.com/vlmfleet/vlmfleet/protocol"
)

// ConfPath is where JetPack keeps the board's nvpmodel configuration.
const ConfPath = "/etc/nvpmodel.conf"

// Conf is what the agent reads of /etc/nvpmodel.conf.
type Conf struct {
	// Modes are the POWER_MODEL blocks, in the file's order.
	Modes []protocol.PowerMode
	// Default is the mode PM_CONFIG names as the board's default; -1 when
	// the file names none.
	Default int
	// GPUMaxFreqFile is the devfreq max_freq file nvpmodel writes a mode's
	// GPU cap to (the MAX_FREQ line of the "PARAM TYPE=CLOCK NAME=GPU"
	// block); "" when the file does not say.
	GPUMaxFreqFile string
}

// Mode finds a mode by name.
func (c Conf) Mode(name string) (protocol.PowerMode, bool) {
	for _, m := range c.Modes {
		if m.Name == name {
			return m, true
		}
	}
	return protocol.PowerMode{}, false
}

// confBlock is the kind of the "< KIND KEY=VALUE ... >" block a line is in.
type confBlock struct {
	kind  string
	attrs map[string]string
	line  int
}

// ParseConf reads nvpmodel.conf text: "< POWER_MODEL ID=0 NAME=MAXN >"
// blocks with "GPU MAX_FREQ 612000000" lines (-1: uncapped), one
// "< PM_CONFIG DEFAULT=2 >", comments from '#'. name is the file's, for
// errors, which give its line.
func ParseConf(name string, data []byte) (Conf, error) {
	c := Conf{Default: -1}
	var cur *confBlock
	ids, names := map[int]int{}, map[string]int{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line, _, _ := strings.Cut(sc.Text(), "#")
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		fail := func(format string, args ...any) error {
			return fmt.Errorf("%s:%d: %s", name, n, fmt.Sprintf(format, args...))
		}
		if strings.HasPrefix(line, "<") {
			b, err := parseBlockHeader(line)
			if err != nil {
				return Conf{}, fail("%v", err)
			}
			b.line = n
			cur = &b
			if err := c.openBlock(b, ids, names); err != nil {
				return Conf{}, fail("%v", err)
			}
			continue
		}
		if cur == nil {
			return Conf{}, fail("%q before the first \"< ... >\" block", clip(line))
		}
		if err := c.blockLine(cur, strings.Fields(line)); err != nil {
			return Conf{}, fail("%v", err)
		}
	}
	if err := sc.Err(); err != nil {
		return Conf{}, fmt.Errorf("%s: %w", name, err)
	}
	if len(c.Modes) == 0 {
		return Conf{}, fmt.Errorf("%s: no \"< POWER_MODEL ID=n NAME=name >\" block; is it an nvpmodel configuration?", name)
	}
	if _, ok := ids[c.Default]; c.Default >= 0 && !ok {
		return Conf{}, fmt.Errorf("%s: PM_CONFIG DEFAULT=%d names no POWER_MODEL (ids %s)", name, c.Default, c.idList())
	}
	return c, nil
}

// parseBlockHeader splits "< KIND KEY=VALUE ... >".
func parseBlockHeader(line string) (confBlock, error) {
	inner, ok := strings.CutSuffix(strings.TrimPrefix(line, "<"), ">")
	if !ok {
		return confBlock{}, fmt.Errorf("%q: a block header ends with '>'", clip(line))
	}
	f := strings.Fields(inner)
	if len(f) == 0 {
		return confBlock{}, fmt.Errorf("%q: a block header names its kind (POWER_MODEL, PM_CONFIG, PARAM)", clip(line))
	}
	b := confBlock{kind: f[0], attrs: map[string]string{}}
	for _, kv := range f[1:] {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return confBlock{}, fmt.Errorf("%q in %s's header: want KEY=VALUE", clip(kv), f[0])
		}
		b.attrs[k] = v
	}
	return b, nil
}

// openBlock takes a block's header: a POWER_MODEL is a mode, PM_CONFIG the
// default; other blocks (PARAM, FAN_CONFIG...) matter only for their lines.
func (c *Conf) openBlock(b confBlock, ids map[int]int, names map[string]int) error {
	switch b.kind {
	case "POWER_MODEL":
		if len(c.Modes) >= protocol.MaxListLen {
			return fmt.Errorf("more than %d POWER_MODEL blocks", protocol.MaxListLen)
		}
		id, err := strconv.Atoi(b.attrs["ID"])
		if err != nil || id < 0 {
			return fmt.Errorf("POWER_MODEL ID=%q: want a number, 0 or more", clip(b.attrs["ID"]))
		}
		name := b.attrs["NAME"]
		if err := protocol.ValidatePowerMode("POWER_MODEL NAME", name); err != nil {
			return err
		}
		if prev, dup := ids[id]; dup {
			return fmt.Errorf("POWER_MODEL ID=%d again (first on line %d)", id, prev)
		}
		if prev, dup := names[name]; dup {
			return fmt.Errorf("POWER_MODEL NAME=%s again (first on line %d)", name, prev)
		}
		ids[id], names[name] = b.line, b.line
		c.Modes = append(c.Modes, protocol.PowerMode{ID: id, Name: name})
	case "PM_CONFIG":
		d, err := strconv.Atoi(b.attrs["DEFAULT"])
		if err != nil || d < 0 {
			return fmt.Errorf("PM_CONFIG DEFAULT=%q: want a mode's ID", clip(b.attrs["DEFAULT"]))
		}
		c.Default = d
	}
	return nil
}

// blockLine takes one line inside a block: a mode's GPU cap, or where the
// GPU clock's devfreq max_freq file is.
func (c *Conf) blockLine(b *confBlock, f []string) error {
	switch {
	case b.kind == "POWER_MODEL" && len(f) >= 2 && f[0] == "GPU" && f[1] == "MAX_FREQ":
		if len(f) != 3 {
			return fmt.Errorf("GPU MAX_FREQ: want one value, Hz or -1 (uncapped)")
		}
		hz, err := strconv.ParseInt(f[2], 10, 64)
		if err != nil || hz < -1 {
			return fmt.Errorf("GPU MAX_FREQ %q: want Hz or -1 (uncapped)", clip(f[2]))
		}
		if hz > 0 {
			c.Modes[len(c.Modes)-1].GPUMaxFreqHz = hz
		}
	case b.kind == "PARAM" && b.attrs["TYPE"] == "CLOCK" && b.attrs["NAME"] == "GPU" && len(f) == 2 && f[0] == "MAX_FREQ":
		if !strings.HasPrefix(f[1], "/") {
			return fmt.Errorf("GPU clock MAX_FREQ %q: want an absolute path", clip(f[1]))
		}
		c.GPUMaxFreqFile = f[1]
	}
	return nil
}

func (c Conf) idList() string {
	var s []string
	for _, m := range c.Modes {
		s = append(s, strconv.Itoa(m.ID))
	}
	return strings.Join(s, ", ")
}

func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "..."
	}
	return s
}
