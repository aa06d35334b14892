package controller

import (
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/vlmfleet/vlmfleet/controller/api"
	"github.com/vlmfleet/vlmfleet/controller/store"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// A backup taken over HTTP while an agent keeps reporting restores into a
// new data dir: the controller starts on it and serves the same agent,
// sweep, job and run, each combination as it was stored.
func TestBackupMidRunRestoresIntoANewDataDir(t *testing.T) {
	c := startController(t, t.TempDir())
	ev, a := announced(t, c, "a1", "d1")
	sw := submit(t, c, protocol.Sweep{Agents: []string{"a1"}, Workload: testWorkload()})
	a.state(t, sw.Jobs[0], protocol.JobAccepted, 1, true)
	run := testRun(store.RunIDFor(sw.Jobs[0], 1), "a1")
	run.JobID, run.SweepID = sw.Jobs[0], sw.ID
	result := func(size string, cams int) {
		m := protocol.ResultMessage{Schema: 1, AgentID: "a1", Run: run, Combination: testCombo(size, cams)}
		a.publish(t, protocol.KindResult, m, protocol.ResultMsgID(run.ID, m.Combination.ComboKey.String()))
	}
	result("480p", 1)
	result("480p", 2)
	ev.waitFor(t, 2, kindIs(api.EventResult))

	// Reads are open on loopback; a backup is not.
	resp, err := http.Get(c.HTTPURL() + "/api/backup")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("backup without the token: %d, want 401", resp.StatusCode)
	}

	// The agent goes on reporting while the copy is taken.
	done := make(chan struct{})
	go func() {
		defer close(done)
		result("720p", 1)
		result("720p", 2)
	}()
	code, body := request(t, http.MethodGet, c.HTTPURL()+"/api/backup", "")
	<-done
	if code != http.StatusOK || len(body) == 0 {
		t.Fatalf("backup: %d, %d bytes", code, len(body))
	}
	ev.waitFor(t, 4, kindIs(api.EventResult))

	restored := t.TempDir()
	if err := os.WriteFile(filepath.Join(restored, "vlmfleet.db"), []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	r := startController(t, restored)

	var orig, back protocol.Run
	getJSON(t, c.HTTPURL()+"/api/runs/"+run.ID, &orig)
	if code := getJSON(t, r.HTTPURL()+"/api/runs/"+run.ID, &back); code != http.StatusOK {
		t.Fatalf("restored run: %d", code)
	}
	if n := len(back.Combinations); n < 2 || n > 4 {
		t.Fatalf("restored run has %d combinations, want the 2 stored before the backup and at most the 2 stored during it", n)
	}
	byKey := map[string]protocol.Combination{}
	for _, cb := range orig.Combinations {
		byKey[cb.ComboKey.String()] = cb
	}
	for _, cb := range back.Combinations {
		if !reflect.DeepEqual(cb, byKey[cb.ComboKey.String()]) {
			t.Errorf("restored combination %s differs from the original", cb.ComboKey)
		}
	}
	var job api.JobView
	if code := getJSON(t, r.HTTPURL()+"/api/jobs/"+sw.Jobs[0], &job); code != http.StatusOK || job.SweepID != sw.ID || job.State != protocol.JobAccepted {
		t.Errorf("restored job: %d %+v", code, job)
	}
	var agents []api.AgentView
	if getJSON(t, r.HTTPURL()+"/api/agents", &agents); len(agents) != 1 || agents[0].ID != "a1" {
		t.Errorf("restored agents: %+v", agents)
	}
	t.Logf("backup of %d bytes restored; run with %d of 4 combinations", len(body), len(back.Combinations))
}
