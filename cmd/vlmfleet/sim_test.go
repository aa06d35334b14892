package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/vlmfleet/vlmfleet/internal/testutil"
)

func TestSimList(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"sim", "--list"}, &out, &errb, func(string) string { return "" }); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	edge, dc, _ := strings.Cut(out.String(), "\n\n")
	if lines := strings.Split(strings.TrimSpace(edge), "\n"); len(lines) != 40 { // header, 38 profiles, footer
		t.Errorf("%d lines:\n%s", len(lines), out.String())
	}
	if lines := strings.Split(strings.TrimSpace(dc), "\n"); len(lines) != 16 { // header, 14 configurations, footer
		t.Errorf("%d data-center lines:\n%s", len(lines), dc)
	}
	if !regexp.MustCompile(`A100-SXM4-80GB\s+Llama-3.2-90B-Vision-Instruct\s+BF16\s+8\s`).MatchString(dc) {
		t.Errorf("no A100 90B TP8 row:\n%s", dc)
	}
	if !regexp.MustCompile(`Jetson AGX Orin\s+Qwen3-VL-4B-Instruct\s+4.4B\s+Q8_0\s+llama.cpp\s+1.31s\s+28.4\s+2\s`).MatchString(out.String()) {
		t.Errorf("no AGX Orin Qwen3-VL-4B row:\n%s", out.String())
	}
	if !strings.Contains(out.String(), "16+") || !strings.Contains(out.String(), "SIMULATED") {
		t.Errorf("list:\n%s", out.String())
	}
}

func TestSimBadInvocation(t *testing.T) {
	for _, args := range [][]string{
		{"sim"},
		{"sim", "--device", "Jetson Nano", "--model", "x"},
		{"sim", "--device", "Jetson AGX Orin", "--model", "Qwen3-VL-4B-Instruct", "--quantization", "FP4"},
		{"sim", "--device", "Jetson AGX Orin", "--model", "Cosmos3-Edge", "--speedup", "0.5"},
		{"sim", "--device", "Jetson Orin NX", "--model", "Cosmos-Reason2-2B", "--power-mode", "30W"},
		{"sim", "--device", "Jetson Orin NX", "--model", "Cosmos-Reason2-2B", "--power-limit", "300"},
	} {
		var out, errb bytes.Buffer
		if code := run(args, &out, &errb, func(string) string { return "" }); code != 2 {
			t.Errorf("%v: exit %d, want 2 (%s)", args, code, errb.String())
		}
	}
}

// lineWriter hands each log line to a channel.
type lineWriter chan string

func (w lineWriter) Write(p []byte) (int, error) {
	w <- string(p)
	return len(p), nil
}

func TestSimServes(t *testing.T) {
	logs := make(lineWriter, 16)
	c := &cli{stdout: io.Discard, stderr: io.Discard, log: zerolog.New(logs), getenv: func(string) string { return "" }}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- cmdSim(ctx, c, []string{"--device", "jetson agx orin", "--model", "Cosmos3-Edge", "--listen", "127.0.0.1:0", "--speedup", "50"})
	}()
	var url string
	select {
	case l := <-logs:
		m := regexp.MustCompile(`"url":"(http://[^"]+)/v1"`).FindStringSubmatch(l)
		if m == nil || !strings.Contains(l, "SIMULATED") {
			t.Fatalf("first log line %s", l)
		}
		url = m[1]
	case err := <-done:
		t.Fatalf("sim ended: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("no log line from sim")
	}
	resp, err := http.Get(url + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(b), `"id":"Cosmos3-Edge"`) {
		t.Errorf("/v1/models: %s", b)
	}
	cancel()
	testutil.Returned(t, done, "sim")
}
