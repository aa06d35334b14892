package controller

import (
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/vlmfleet/vlmfleet/controller/api"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// metricValue is the value of the sample named exactly series (name and
// labels as the text format writes them) in a scrape, or -1 if absent.
func metricValue(t *testing.T, scrape, series string) float64 {
	t.Helper()
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(series) + ` (\S+)$`).FindStringSubmatch(scrape)
	if m == nil {
		return -1
	}
	v, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		t.Fatalf("%s: %v", series, err)
	}
	return v
}

// /metrics counts what was ingested and refused by kind, shows jobs by
// state, agents online, a running sweep's progress, NATS, JetStream and the
// store, and times API requests by route pattern, not by raw path.
func TestMetricsDescribeTheLab(t *testing.T) {
	c := startController(t, t.TempDir())
	ev, a := announced(t, c, "a1", "d1")
	sw := submit(t, c, protocol.Sweep{Agents: []string{"a1"}, Workload: testWorkload()})
	a.state(t, sw.Jobs[0], protocol.JobAccepted, 1, true)
	ev.waitFor(t, 1, kindIs(api.EventState))
	a.publish(t, protocol.KindState, []byte("{not json"), "")
	eventually(t, "the malformed state rejected", func() bool {
		_, body := request(t, http.MethodGet, c.HTTPURL()+"/metrics", "")
		return metricValue(t, body, `vlmfleet_messages_rejected_total{kind="state"}`) == 1
	})
	getJSON(t, c.HTTPURL()+"/api/runs/no-such-run", nil)
	getJSON(t, c.HTTPURL()+"/api/runs/another-run", nil)

	code, body := request(t, http.MethodGet, c.HTTPURL()+"/metrics", "")
	if code != http.StatusOK {
		t.Fatalf("GET /metrics: %d %s", code, body)
	}
	for series, want := range map[string]float64{
		`vlmfleet_messages_ingested_total{kind="hello"}`:        1,
		`vlmfleet_messages_ingested_total{kind="state"}`:        1,
		`vlmfleet_messages_ingested_total{kind="result"}`:       0,
		`vlmfleet_messages_rejected_total{kind="state"}`:        1,
		`vlmfleet_jobs{state="accepted"}`:                       1,
		`vlmfleet_jobs{state="queued"}`:                         0,
		`vlmfleet_agents{online="true"}`:                        1,
		`vlmfleet_sweep_jobs{of="total",sweep="` + sw.ID + `"}`: 1,
		`vlmfleet_sweep_jobs{of="ended",sweep="` + sw.ID + `"}`: 0,
		`vlmfleet_nats_connected`:                               1,
		`vlmfleet_jetstream_ok`:                                 1,
		`vlmfleet_health_ok`:                                    1,
		`vlmfleet_health_problems{component="jetstream"}`:       0,
		`vlmfleet_api_request_duration_seconds_count{code="404",method="GET",route="GET /api/runs/{id}"}`: 2,
	} {
		if got := metricValue(t, body, series); got != want {
			t.Errorf("%s = %v, want %v", series, got, want)
		}
	}
	if v := metricValue(t, body, "vlmfleet_store_bytes"); v <= 0 {
		t.Errorf("vlmfleet_store_bytes = %v, want the store's size", v)
	}
	if strings.Contains(body, "no-such-run") {
		t.Error("a raw path is a label value: every run would make a series")
	}
	if !strings.Contains(body, "process_resident_memory_bytes") {
		t.Error("no process metrics")
	}
}

// Off loopback /metrics is read as every read is: with the API token in
// the Authorization header (as Prometheus sends a credentials file), or by
// anyone under --public-read; a backup always needs the token.
func TestMetricsAndBackupOffLoopback(t *testing.T) {
	c := startOffLoopback(t, false)
	bearer := map[string]string{"Authorization": "Bearer " + c.APIToken()}
	if code, body, _ := send(t, http.MethodGet, c.HTTPURL()+"/metrics", "", nil); code != http.StatusUnauthorized {
		t.Errorf("GET /metrics without the token: %d %s, want 401", code, body)
	}
	if code, body, _ := send(t, http.MethodGet, c.HTTPURL()+"/metrics", "", bearer); code != http.StatusOK || !strings.Contains(body, "vlmfleet_health_ok 1") {
		t.Errorf("GET /metrics with the token: %d", code)
	}
	pub := startOffLoopback(t, true)
	if code, _, _ := send(t, http.MethodGet, pub.HTTPURL()+"/metrics", "", nil); code != http.StatusOK {
		t.Errorf("--public-read: GET /metrics without the token: %d, want 200", code)
	}
	if code, body, _ := send(t, http.MethodGet, pub.HTTPURL()+"/api/backup", "", nil); code != http.StatusUnauthorized {
		t.Errorf("--public-read: GET /api/backup without the token: %d %s, want 401", code, body)
	}
	if code, _, h := send(t, http.MethodGet, pub.HTTPURL()+"/api/backup", "", map[string]string{"Authorization": "Bearer " + pub.APIToken()}); code != http.StatusOK ||
		h.Get("Content-Type") != "application/octet-stream" || h.Get("Content-Length") == "" {
		t.Errorf("GET /api/backup with the token: %d, %v", code, h)
	}
}
