package controller

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/vlmfleet/vlmfleet/controller/api"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// startImport opens a connection and sends an import's headers, for a
// body of size bytes, and the first part of that body.
func startImport(t *testing.T, c *Controller, size int, part []byte) net.Conn {
	t.Helper()
	addr := strings.TrimPrefix(c.HTTPURL(), "http://")
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	if _, err := fmt.Fprintf(conn, "POST /api/runs/import HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s",
		addr, c.APIToken(), size, part); err != nil {
		t.Fatal(err)
	}
	return conn
}

// answerOf reads the answer on conn, waiting at most limit.
func answerOf(t *testing.T, conn net.Conn, limit time.Duration) (int, string) {
	t.Helper()
	_ = conn.SetReadDeadline(time.Now().Add(limit))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	_, _ = b.ReadFrom(resp.Body)
	return resp.StatusCode, b.String()
}

// goodImport is the body of an import of one valid run.
func goodImport(id string) []byte {
	run := testRun(id, "")
	run.Source, run.Status = protocol.SourceBench, protocol.RunCompleted
	run.Combinations = []protocol.Combination{*testCombo("720p", 1)}
	b, _ := json.Marshal(api.ImportRequest{Runs: []api.ImportEntry{{Origin: id + ".json", Run: run}}})
	return b
}

func importStatus(t *testing.T, c *Controller, body []byte) (int, string, http.Header) {
	return send(t, http.MethodPost, c.HTTPURL()+"/api/runs/import", string(body),
		map[string]string{"Content-Type": "application/json", "Authorization": "Bearer " + c.APIToken()})
}

// Two imports that send their headers and part of a 1 MB body, then wait,
// are dropped with 408 once nothing has come for BodyStallTimeout: their
// places are freed and a third import goes through.
func TestStalledImportsAreDropped(t *testing.T) {
	// Long enough that a probe on a busy host still finds both imports
	// holding their places before the stall drops them.
	const stall = 2 * time.Second
	c := startControllerWith(t, Options{DataDir: t.TempDir(), BodyStallTimeout: stall})
	var conns []net.Conn
	for range api.MaxConcurrentImports {
		conns = append(conns, startImport(t, c, 1e6, append([]byte(`{"runs":[`), bytes.Repeat([]byte(" "), 64<<10)...)))
	}
	// Both hold their places (read from the controller: a probe import
	// would take a place itself while the stalled ones start), and a third
	// is refused until they are dropped.
	eventually(t, "the stalled imports hold both places", func() bool {
		return len(c.sec.Imports) == api.MaxConcurrentImports
	})
	held := time.Now()
	code, body, _ := importStatus(t, c, goodImport("probe"))
	if code != http.StatusTooManyRequests && time.Since(held) < stall {
		t.Fatalf("an import while the stalled ones hold both places: %d %s, want 429", code, body)
	}
	start := time.Now()
	for {
		code, body, _ := importStatus(t, c, goodImport("third"))
		if code == http.StatusOK {
			break
		}
		if code != http.StatusTooManyRequests || time.Since(start) > 10*stall {
			t.Fatalf("a third import %s after the others stalled: %d %s, want 200 once they are dropped (after %s)", time.Since(start).Round(time.Millisecond), code, body, stall)
		}
		time.Sleep(stall / 10)
	}
	t.Logf("a third import went through %s after the others were seen stalled", time.Since(start).Round(time.Millisecond))
	for i, conn := range conns {
		if code, body := answerOf(t, conn, 5*time.Second); code != http.StatusRequestTimeout || !strings.Contains(errorOf(body), "stopped arriving") {
			t.Errorf("stalled import %d: %d %s, want 408", i, code, body)
		}
	}
}

// A body that never pauses for BodyStallTimeout but trickles in under
// BodyMinRate is dropped too; one that arrives in pauses shorter than the
// stall, above the rate, is read whole, however long it takes.
func TestTricklingImportIsDroppedAndASteadyOneIsNot(t *testing.T) {
	const stall = 300 * time.Millisecond
	c := startControllerWith(t, Options{DataDir: t.TempDir(), BodyStallTimeout: stall, BodyMinRate: 1 << 10})
	trickle := startImport(t, c, 1e6, []byte(`{"runs":[`))
	done := make(chan struct{})
	defer close(done)
	go func() { // a byte every stall/3: never idle for a stall
		for {
			select {
			case <-done:
				return
			case <-time.After(stall / 3):
				if _, err := trickle.Write([]byte(" ")); err != nil {
					return
				}
			}
		}
	}()
	start := time.Now()
	if code, body := answerOf(t, trickle, 10*stall); code != http.StatusRequestTimeout {
		t.Errorf("a trickle of a byte every %s: %d %s after %s, want 408", stall/3, code, body, time.Since(start).Round(time.Millisecond))
	}
	body := append(goodImport("steady"), bytes.Repeat([]byte(" "), 8<<10)...) // 8 KiB in 1.2 s: above the rate
	steady := startImport(t, c, len(body), nil)
	for i := 0; i < len(body); i += len(body)/8 + 1 {
		time.Sleep(stall / 2)
		if _, err := steady.Write(body[i:min(len(body), i+len(body)/8+1)]); err != nil {
			t.Fatal(err)
		}
	}
	if code, answer := answerOf(t, steady, 5*time.Second); code != http.StatusOK {
		t.Errorf("a body sent over %s in pauses of %s: %d %s, want 200", time.Since(start).Round(time.Millisecond), stall/2, code, answer)
	}
}
