package faults

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// listProbeEnv, set to a listProbeConfig in JSON, makes the test binary
// the list probe (TestMain) instead of running tests.
const listProbeEnv = "VLMFLEET_LIST_PROBE"

// listProbeConfig is what the probe reads, and how often.
type listProbeConfig struct {
	Base, Token string
	Paths       []string
	// Pause is the breath between two reads (0: back to back).
	Pause time.Duration
	// Rounds ends the probe after reading every path that many times (0:
	// it reads until stopped).
	Rounds int
}

// listProbe times the controller's lists from a process of its own. Timed
// from the test process, whose swarm runs a thousand agents, a read waits
// for a core there as much as for the controller, and its time says more
// of the swarm than of the controller.
type listProbe struct {
	t     *testing.T
	cfg   listProbeConfig
	cmd   *exec.Cmd
	stdin io.WriteCloser
	done  chan []watchStats
}

// startListProbe starts the test binary as the probe of the lab's
// controller: it reads paths in turn, pause apart, until stop.
func (l *lab) startListProbe(paths []string, pause time.Duration) *listProbe {
	l.t.Helper()
	return l.startProbe(listProbeConfig{Paths: paths, Pause: pause})
}

// startProbe starts the probe as cfg says, on the lab's controller.
func (l *lab) startProbe(cfg listProbeConfig) *listProbe {
	t := l.t
	t.Helper()
	cfg.Base, cfg.Token = "http://"+l.httpAddr, l.token
	enc, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), listProbeEnv+"="+string(enc))
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start the list probe: %v", err)
	}
	p := &listProbe{t: t, cfg: cfg, cmd: cmd, stdin: stdin, done: make(chan []watchStats, 1)}
	sc := bufio.NewScanner(stdout)
	if !sc.Scan() || sc.Text() != probeReady {
		_ = cmd.Process.Kill()
		t.Fatalf("the list probe did not start: %q, %v", sc.Text(), sc.Err())
	}
	go p.collect(sc)
	return p
}

// probeReady is the probe's first line, once it has read each path once,
// untimed: a first read pays for the connection and the process's start,
// which the controller is not to be charged with.
const probeReady = "ready"

// collect reads the probe's lines: "i micros", or "i error: ...".
func (p *listProbe) collect(sc *bufio.Scanner) {
	st := make([]watchStats, len(p.cfg.Paths))
	for sc.Scan() {
		idx, rest, _ := strings.Cut(sc.Text(), " ")
		i, err := strconv.Atoi(idx)
		if err != nil || i < 0 || i >= len(st) {
			p.t.Errorf("list probe: %q", sc.Text())
			continue
		}
		us, err := strconv.ParseInt(rest, 10, 64)
		if err != nil {
			p.t.Errorf("list probe: GET %s: %s", p.cfg.Paths[i], rest)
			continue
		}
		st[i].latencies = append(st[i].latencies, time.Duration(us)*time.Microsecond)
	}
	p.done <- st
}

// stop ends the probe (its stdin closes) and returns each path's reads,
// in the order of the paths.
func (p *listProbe) stop() []watchStats {
	_ = p.stdin.Close()
	return p.wait()
}

// wait waits for the probe to end (after its rounds, or once stopped) and
// returns each path's reads.
func (p *listProbe) wait() []watchStats {
	st := <-p.done
	if err := p.cmd.Wait(); err != nil {
		p.t.Errorf("list probe: %v", err)
	}
	return st
}

// timings are the probe's reads as each path's p50, p99 and slowest.
func (p *listProbe) timings() []listTiming {
	st := p.stop()
	out := make([]listTiming, len(st))
	for i, s := range st {
		out[i] = listTiming{path: p.cfg.Paths[i], p50: s.pct(0.5), p99: s.pct(0.99), max: s.pct(1), n: len(s.latencies)}
	}
	return out
}

// runListProbe is the probe's process: it reads until its stdin closes.
func runListProbe(raw string) int {
	var cfg listProbeConfig
	if err := json.Unmarshal([]byte(raw), &cfg); err != nil || len(cfg.Paths) == 0 {
		fmt.Fprintf(os.Stderr, "%s: %v (want a config with paths)\n", listProbeEnv, err)
		return 2
	}
	api := &capacityAPI{base: cfg.Base, token: cfg.Token}
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		cancel()
	}()
	for _, path := range cfg.Paths {
		if _, err := api.get(ctx, path); err != nil {
			fmt.Printf("GET %s: %v\n", path, err)
			return 1
		}
	}
	fmt.Println(probeReady)
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	for n := 0; ctx.Err() == nil && (cfg.Rounds == 0 || n < cfg.Rounds*len(cfg.Paths)); n++ {
		i := n % len(cfg.Paths)
		began := time.Now()
		_, err := api.get(ctx, cfg.Paths[i])
		took := time.Since(began)
		switch {
		case ctx.Err() != nil:
		case err != nil:
			fmt.Fprintf(out, "%d error: %q\n", i, err.Error()) // quoted: one line
		default:
			fmt.Fprintf(out, "%d %d\n", i, took.Microseconds())
		}
		select {
		case <-ctx.Done():
		case <-time.After(cfg.Pause):
		}
	}
	return 0
}
