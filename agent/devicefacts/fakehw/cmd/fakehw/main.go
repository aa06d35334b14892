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
		nvidiaSMI(cfg.SMI, args)
	case "nvpmodel":
		nvpmodel(cfg.NVPModel, args)
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

func nvidiaSMI(c *fakehw.SMI, args []string) {
	if c == nil {
		fail(9, "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.")
	}
	var query, format string
	loopMS := 0
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
		switch {
		case a == "--query-gpu" || strings.HasPrefix(a, "--query-gpu="):
			query = val()
		case a == "--format" || strings.HasPrefix(a, "--format="):
			format = val()
		case a == "-lms" || a == "--loop-ms" || strings.HasPrefix(a, "--loop-ms="):
			n, err := strconv.Atoi(val())
			if err != nil || n <= 0 {
				fail(2, "Invalid loop interval.")
			}
			loopMS = n
		case a == "-l" || a == "--loop" || strings.HasPrefix(a, "--loop="):
			n, err := strconv.Atoi(val())
			if err != nil || n <= 0 {
				fail(2, "Invalid loop interval.")
			}
			loopMS = n * 1000
		case a == "--help-query-gpu":
			for _, f := range knownFields() {
				if !slices.Contains(c.Unsupported, f) {
					fmt.Printf("\"%s\"\n", f)
				}
			}
			return
		default:
			fail(2, "Invalid combination of input arguments. Please run 'nvidia-smi -h' for help.")
		}
	}
	if query == "" {
		banner(c)
		return
	}
	fields := strings.Split(query, ",")
	for _, f := range fields {
		if !slices.Contains(knownFields(), f) || slices.Contains(c.Unsupported, f) {
			fmt.Printf("Field \"%s\" is not a valid field to query.\n\n", f)
			os.Exit(2)
		}
	}
	opts := strings.Split(format, ",")
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
				v, ok := g[f]
				switch {
				case f == "timestamp":
					v = now
				case f == "driver_version":
					v = c.Driver
				case f == "count":
					v = strconv.Itoa(len(c.GPUs))
				case !ok:
					v = "[N/A]"
				case units && !strings.HasPrefix(v, "["):
					v += unit(f)
				}
				vals[i] = v
			}
			fmt.Fprintln(w, strings.Join(vals, ", "))
		}
		if err := w.Flush(); err != nil || loopMS == 0 {
			return
		}
		time.Sleep(time.Duration(loopMS) * time.Millisecond)
	}
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

// nvpmodel -q [--verbose]: the current power mode and its number.
func nvpmodel(c *fakehw.NVPModel, args []string) {
	if len(args) == 0 || args[0] != "-q" {
		fail(1, "nvpmodel: this fake only answers -q")
	}
	if c == nil {
		fail(1, "NVPM ERROR: failed to read config")
	}
	fmt.Printf("NV Power Mode: %s\n%d\n", c.Mode, c.ID)
}
