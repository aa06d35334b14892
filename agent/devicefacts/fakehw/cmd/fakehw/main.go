// Command fakehw stands in for tegrastats, nvidia-smi and nvpmodel in tests,
// chosen by the name it runs under. It honours the flags vlmfleet uses and
// prints the real output formats; its scenario is fakehw.json next to it.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/vlmfleet/vlmfleet/agent/devicefacts/fakehw"
	"github.com/vlmfleet/vlmfleet/protocol"
)

func main() {
	exe, err := os.Executable()
	if err != nil {
		fail(1, "fakehw: %v", err)
	}
	var cfg fakehw.Config
	b, err := os.ReadFile(filepath.Join(filepath.Dir(exe), fakehw.ConfigFile))
	if err != nil {
		fail(1, "fakehw: %v", err)
	}
	if err := json.Unmarshal(b, &cfg); err != nil {
		fail(1, "fakehw: %s: %v", fakehw.ConfigFile, err)
	}
	args := os.Args[1:]
	switch filepath.Base(exe) {
	case "tegrastats":
		tegrastats(cfg.Tegrastats, args)
	case "nvidia-smi":
		nvidiaSMI(cfg.SMI, filepath.Dir(exe), args)
	case "nvpmodel":
		nvpmodel(cfg.NVPModel, filepath.Dir(exe), args)
	default:
		fail(1, "fakehw: run me as one of %v", fakehw.Tools())
	}
}

func fail(code int, format string, args ...any) {
	fmt.Fprintf(os.Stderr, format+"\n", args...)
	os.Exit(code)
}

// tegrastats [--interval MS]: a line every interval (default 1000 ms)
// until killed, as the real one does without --start/--logfile.
func tegrastats(c *fakehw.Tegrastats, args []string) {
	interval := 1000
	for i := 0; i < len(args); i++ {
		switch args[i] {
		case "--interval":
			if i+1 >= len(args) {
				fail(1, "tegrastats: --interval needs a value")
			}
			n, err := strconv.Atoi(args[i+1])
			if err != nil || n <= 0 {
				fail(1, "tegrastats: bad interval %q", args[i+1])
			}
			interval = n
			i++
		default:
			fail(1, "Usage: tegrastats [-option]\nUnrecognised option %q (this fake knows --interval)", args[i])
		}
	}
	if c == nil || len(c.Lines) == 0 {
		fail(1, "tegrastats: nothing to print")
	}
	w := bufio.NewWriter(os.Stdout)
	for n := 0; ; n++ {
		if c.ExitAfter > 0 && n == c.ExitAfter {
			fmt.Fprintln(os.Stderr, "tegrastats: simulated crash")
			os.Exit(1)
		}
		fmt.Fprintln(w, c.Lines[n%len(c.Lines)])
		if err := w.Flush(); err != nil {
			os.Exit(1)
		}
		time.Sleep(time.Duration(interval) * time.Millisecond)
	}
}

// knownFields are nvidia-smi --query-gpu fields (a subset of
// `nvidia-smi --help-query-gpu`).
func knownFields() []string {
	return []string{"timestamp", "driver_version", "count", "name", "serial", "uuid", "pci.bus_id",
		"index", "compute_cap", "pstate", "memory.total", "memory.used", "memory.free", "memory.reserved",
		"utilization.gpu", "utilization.memory", "temperature.gpu", "temperature.memory",
		"power.draw", "power.draw.average", "power.draw.instant", "power.limit", "power.default_limit",
		"power.min_limit", "power.max_limit", "enforced.power.limit", "clocks.sm", "clocks.mem",
		"clocks.gr", "clocks.max.sm", "clocks.max.mem", "clocks_event_reasons.active",
		"clocks_throttle_reasons.active", "fan.speed", "vbios_version"}
}

// smiArgs are the nvidia-smi flags the fake knows.
type smiArgs struct {
	query, format, id, limit string
	loopMS                   int
	helpQuery                bool
}

func nvidiaSMI(c *fakehw.SMI, dir string, args []string) {
	if c == nil {
		fail(9, "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.")
	}
	loadLimits(c, dir)
	a := parseSMIArgs(args)
	switch {
	case a.helpQuery:
		for _, f := range knownFields() {
			if !slices.Contains(c.Unsupported, f) {
				fmt.Printf("\"%s\"\n", f)
			}
		}
	case a.limit != "":
		setLimit(c, dir, a.id, a.limit)
	case a.query == "":
		banner(c)
	default:
		printQuery(c, a)
	}
}

// parseSMIArgs reads the flags as nvidia-smi does: "--flag value" or
// "--flag=value"; anything else fails as nvidia-smi fails.
func parseSMIArgs(args []string) smiArgs {
	var s smiArgs
	for i := 0; i < len(args); i++ {
		a := args[i]
		val := func() string {
			if k, v, ok := strings.Cut(a, "="); ok && strings.HasPrefix(k, "--") {
				return v
			}
			if i+1 >= len(args) {
				fail(2, "Option %q requires a value.", a)
			}
			i++
			return args[i]
		}
		interval := func(scale int) int {
			n, err := strconv.Atoi(val())
			if err != nil || n <= 0 {
				fail(2, "Invalid loop interval.")
			}
			return n * scale
		}
		switch {
		case a == "--query-gpu" || strings.HasPrefix(a, "--query-gpu="):
			s.query = val()
		case a == "--format" || strings.HasPrefix(a, "--format="):
			s.format = val()
		case a == "-lms" || a == "--loop-ms" || strings.HasPrefix(a, "--loop-ms="):
			s.loopMS = interval(1)
		case a == "-l" || a == "--loop" || strings.HasPrefix(a, "--loop="):
			s.loopMS = interval(1000)
		case a == "-i" || a == "--id" || strings.HasPrefix(a, "--id="):
			s.id = val()
		case a == "-pl" || a == "--power-limit" || strings.HasPrefix(a, "--power-limit="):
			s.limit = val()
		case a == "--help-query-gpu":
			s.helpQuery = true
			return s
		default:
			fail(2, "Invalid combination of input arguments. Please run 'nvidia-smi -h' for help.")
		}
	}
	return s
}

// printQuery answers --query-gpu in CSV, once or every loopMS.
func printQuery(c *fakehw.SMI, a smiArgs) {
	fields := strings.Split(a.query, ",")
	for _, f := range fields {
		if !slices.Contains(knownFields(), f) || slices.Contains(c.Unsupported, f) {
			fmt.Printf("Field \"%s\" is not a valid field to query.\n\n", f)
			os.Exit(2)
		}
	}
	opts := strings.Split(a.format, ",")
	header, units := !slices.Contains(opts, "noheader"), !slices.Contains(opts, "nounits")
	if len(opts) == 0 || opts[0] != "csv" {
		fail(2, "Invalid format. Please run 'nvidia-smi -h' for help.")
	}
	if header {
		fmt.Println(strings.Join(fields, ", "))
	}
	w := bufio.NewWriter(os.Stdout)
	for tick := 0; ; tick++ {
		if c.ExitAfter > 0 && tick == c.ExitAfter {
			os.Exit(1)
		}
		now := time.Now().Format("2006/01/02 15:04:05.000")
		for _, g := range c.GPUs {
			vals := make([]string, len(fields))
			for i, f := range fields {
				vals[i] = smiValue(c, g, f, now, units)
			}
			fmt.Fprintln(w, strings.Join(vals, ", "))
		}
		if err := w.Flush(); err != nil || a.loopMS == 0 {
			return
		}
		time.Sleep(time.Duration(a.loopMS) * time.Millisecond)
	}
}

// smiValue is one GPU's value of a field as nvidia-smi prints it.
func smiValue(c *fakehw.SMI, g map[string]string, f, now string, units bool) string {
	v, ok := g[f]
	switch {
	case f == "timestamp":
		return now
	case f == "driver_version":
		return c.Driver
	case f == "count":
		return strconv.Itoa(len(c.GPUs))
	case !ok:
		return "[N/A]"
	case units && !strings.HasPrefix(v, "["):
		return v + unit(f)
	}
	return v
}

func unit(field string) string {
	switch {
	case strings.HasPrefix(field, "memory."):
		return " MiB"
	case strings.HasPrefix(field, "utilization."):
		return " %"
	case strings.HasPrefix(field, "power.") || field == "enforced.power.limit":
		return " W"
	case strings.HasPrefix(field, "clocks.") && !strings.HasPrefix(field, "clocks_"):
		return " MHz"
	}
	return ""
}

func banner(c *fakehw.SMI) {
	fmt.Println(time.Now().Format("Mon Jan  2 15:04:05 2006") + "       ")
	fmt.Println("+-----------------------------------------------------------------------------------------+")
	fmt.Printf("| NVIDIA-SMI %-22s Driver Version: %-14s CUDA Version: %-9s|\n", c.Driver, c.Driver, c.CUDA)
	fmt.Println("|-----------------------------------------+------------------------+----------------------+")
	for i, g := range c.GPUs {
		fmt.Printf("|   %d  %-36s|   %s |\n", i, g["name"], g["pci.bus_id"])
	}
	fmt.Println("+-----------------------------------------------------------------------------------------+")
}

// nvpmodel -q: the current power mode and its number; nvpmodel -m ID:
// switch, as the real one does, asking first where the mode needs a reboot.
func nvpmodel(c *fakehw.NVPModel, dir string, args []string) {
	if c == nil {
		fail(1, "NVPM ERROR: failed to read config")
	}
	switch {
	case len(args) >= 1 && args[0] == "-q":
		mode, id := c.Mode, c.ID
		if b, err := os.ReadFile(filepath.Join(dir, fakehw.NVPModelState)); err == nil {
			if n, err := fmt.Sscanf(string(b), "%d %s", &id, &mode); n != 2 || err != nil {
				fail(1, "nvpmodel: bad state file %q", b)
			}
		}
		fmt.Printf("NV Power Mode: %s\n%d\n", mode, id)
	case len(args) == 2 && args[0] == "-m":
		switchMode(c, dir, args[1])
	default:
		fail(1, "nvpmodel: this fake answers -q and -m ID")
	}
}

func switchMode(c *fakehw.NVPModel, dir, arg string) {
	id, err := strconv.Atoi(arg)
	i := slices.IndexFunc(c.Modes, func(m protocol.PowerMode) bool { return m.ID == id })
	if err != nil || i < 0 {
		fail(1, "NVPM ERROR: Invalid power mode id %s", arg)
	}
	m := c.Modes[i]
	if slices.Contains(c.FailIDs, id) {
		logLine(dir, fakehw.NVPModelLog, "-m %d %s failed", id, m.Name)
		fail(1, "NVPM ERROR: failed to set power mode %d: simulated failure", id)
	}
	if slices.Contains(c.RebootIDs, id) {
		fmt.Printf("NVPM WARN: Reboot required for changing to this power mode: %d\n", id)
		fmt.Print("NVPM WARN: DO YOU WANT TO REBOOT NOW? enter YES/yes to confirm:\n")
		answer, _ := bufio.NewReader(os.Stdin).ReadString('\n')
		if a := strings.TrimSpace(answer); a != "YES" && a != "yes" {
			logLine(dir, fakehw.NVPModelLog, "-m %d %s declined reboot", id, m.Name)
			return
		}
	}
	if err := os.WriteFile(filepath.Join(dir, fakehw.NVPModelState), []byte(fmt.Sprintf("%d %s\n", id, m.Name)), 0o644); err != nil {
		fail(1, "nvpmodel: %v", err)
	}
	if c.MaxFreqFile != "" {
		hz := m.GPUMaxFreqHz
		if hz == 0 {
			hz = c.UncappedHz
		}
		if err := os.WriteFile(c.MaxFreqFile, []byte(strconv.FormatInt(hz, 10)+"\n"), 0o644); err != nil {
			fail(1, "nvpmodel: %v", err)
		}
	}
	logLine(dir, fakehw.NVPModelLog, "-m %d %s", id, m.Name)
}

// logLine appends one line to a log next to the fake, whole: tests wait
// on its lines.
func logLine(dir, name, format string, args ...any) {
	f, err := os.OpenFile(filepath.Join(dir, name), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		fail(1, "fakehw: %v", err)
	}
	defer f.Close()
	if _, err := fmt.Fprintf(f, format+"\n", args...); err != nil {
		fail(1, "fakehw: %v", err)
	}
}

// loadLimits applies the power limits -pl set before.
func loadLimits(c *fakehw.SMI, dir string) {
	b, err := os.ReadFile(filepath.Join(dir, fakehw.SMIState))
	if err != nil {
		return
	}
	var limits map[string]string
	if err := json.Unmarshal(b, &limits); err != nil {
		fail(1, "nvidia-smi: bad state file: %v", err)
	}
	for _, g := range c.GPUs {
		if v, ok := limits[g["index"]]; ok {
			g["power.limit"] = v
		}
	}
}

// setLimit is nvidia-smi [-i N] -pl W: every GPU, or GPU N, within the
// range each allows, kept in SMIState and logged.
func setLimit(c *fakehw.SMI, dir, id, limit string) {
	w, err := strconv.ParseFloat(limit, 64)
	if err != nil {
		fail(2, "Invalid power limit %q.", limit)
	}
	limits := map[string]string{}
	for _, g := range c.GPUs {
		limits[g["index"]] = g["power.limit"]
	}
	n := 0
	for _, g := range c.GPUs {
		if id != "" && g["index"] != id {
			continue
		}
		lo, _ := strconv.ParseFloat(g["power.min_limit"], 64)
		hi, _ := strconv.ParseFloat(g["power.max_limit"], 64)
		if w < lo || w > hi {
			fail(2, "Provided power limit %.2f W is not a valid power limit which should be between %.2f W and %.2f W for GPU %s", w, lo, hi, g["pci.bus_id"])
		}
		fmt.Printf("Power limit for GPU %s was set to %.2f W from %s W.\n", g["pci.bus_id"], w, g["power.limit"])
		limits[g["index"]] = strconv.FormatFloat(w, 'f', 2, 64)
		n++
	}
	if n == 0 {
		fail(6, "No devices were found")
	}
	b, _ := json.Marshal(limits)
	if err := os.WriteFile(filepath.Join(dir, fakehw.SMIState), b, 0o644); err != nil {
		fail(1, "nvidia-smi: %v", err)
	}
	logLine(dir, fakehw.SMILog, "-i %s -pl %s", id, limit)
	fmt.Println("All done.")
}
