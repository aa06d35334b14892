package controller

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/vlmfleet/vlmfleet/controller/api"
	"github.com/vlmfleet/vlmfleet/protocol"
)

func TestSSEDeliversProgress(t *testing.T) {
	c := startController(t, t.TempDir())
	_, a := announced(t, c, "a1", "d1")
	job := submitJobs(t, c, "a1")[0]
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, c.HTTPURL()+"/api/events?kind=progress", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			case <-ctx.Done():
				return
			}
		}
	}()
	next := func() string {
		t.Helper()
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatal("event stream ended")
			}
			return l
		case <-ctx.Done():
			t.Fatal("timed out reading the event stream")
		}
		return ""
	}
	if l := next(); l != ": connected" {
		t.Fatalf("first line %q", l)
	}
	p := protocol.Progress{Schema: 1, AgentID: "a1", JobID: job, RunID: "r", Time: time.Now().UTC(), Phase: protocol.PhaseMeasure,
		Combo: protocol.ComboKey{Size: "720p", Images: 1, Cameras: 2}, ComboN: 3, Done: 3, Total: 8, MeanTTFT: 1.4, Simulated: true}
	data, _ := json.Marshal(p)
	// A heartbeat is filtered out by ?kind=progress; the progress must arrive.
	hb, _ := json.Marshal(protocol.Heartbeat{Schema: 1, AgentID: "a1", Time: time.Now(), State: protocol.AgentBusy, JobID: job})
	if err := a.nc.Publish(protocol.AgentSubject("a1", protocol.KindHeartbeat), hb); err != nil {
		t.Fatal(err)
	}
	if err := a.nc.Publish(protocol.AgentSubject("a1", protocol.KindProgress), data); err != nil {
		t.Fatal(err)
	}
	if err := a.nc.Flush(); err != nil {
		t.Fatal(err)
	}
	for {
		l := next()
		if strings.HasPrefix(l, ":") || l == "" {
			continue
		}
		if l != "event: progress" {
			t.Fatalf("got %q, want event: progress", l)
		}
		break
	}
	l := next()
	var got protocol.Progress
	if err := json.Unmarshal([]byte(strings.TrimPrefix(l, "data: ")), &got); err != nil {
		t.Fatalf("%q: %v", l, err)
	}
	if got.JobID != job || got.Done != 3 || got.Combo.Cameras != 2 {
		t.Errorf("progress %+v", got)
	}
	// The live snapshot keeps the latest progress for the page.
	var snap api.LiveSnapshot
	getJSON(t, c.HTTPURL()+"/api/live", &snap)
	if len(snap.Progress) != 1 || snap.Progress[0].JobID != job {
		t.Errorf("snapshot progress %+v", snap.Progress)
	}
}
