package controller

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/vlmfleet/vlmfleet/controller/api"
	"github.com/vlmfleet/vlmfleet/controller/store"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// mountSmallDisk mounts a tmpfs of size bytes on a new directory and
// unmounts it when the test ends (after the controller closed: cleanups
// run last-registered first). It skips the test, saying why, where this
// process may not mount file systems (not root, no CAP_SYS_ADMIN, a
// container without it).
func mountSmallDisk(t *testing.T, size int64) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "disk")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("mount", "-t", "tmpfs", "-o", fmt.Sprintf("size=%d,mode=0700", size), "tmpfs", dir).CombinedOutput()
	if err != nil {
		t.Skipf("a full disk needs a small file system of its own, and mounting a tmpfs is not permitted here (run as root to include this test): %v: %s", err, strings.TrimSpace(string(out)))
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", dir, err, out)
		}
	})
	return dir
}

// fillDisk writes a file in dir until the file system has no space left,
// and returns its name.
func fillDisk(t *testing.T, dir string) string {
	t.Helper()
	name := filepath.Join(dir, "filler")
	f, err := os.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	chunk := make([]byte, 64<<10)
	for {
		if _, err := f.Write(chunk); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("fill %s: %v", name, err)
			}
			break
		}
	}
	// The last, partial chunk leaves a few blocks: take them too.
	for {
		if _, err := f.Write(chunk[:512]); err != nil {
			return name
		}
	}
}

// publishUntilStored publishes like an agent does: it waits for the
// stream's ack and retries with the same message id until one comes or ctx
// ends.
func publishUntilStored(ctx context.Context, js jetstream.JetStream, subject string, v any, msgID string) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	for {
		pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		_, err := js.Publish(pctx, subject, data, jetstream.WithMsgID(msgID))
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("publish %s: %w (last error: %v)", msgID, ctx.Err(), err)
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// Issue 11 item 5: the disk under the embedded JetStream fills while an
// agent reports results. /api/health must say so within 30 s; once space
// returns, the controller repairs JetStream by itself and every result is
// stored, once.
func TestFullDiskIsReportedAndRecoversWhenSpaceReturns(t *testing.T) {
	dir := mountSmallDisk(t, 24<<20)
	c := startController(t, dir)
	ev, a := announced(t, c, "a1", "d1")
	sw := submit(t, c, protocol.Sweep{Agents: []string{"a1"}, Workload: testWorkload()})
	a.state(t, sw.Jobs[0], protocol.JobAccepted, 1, true)
	ev.waitFor(t, 1, kindIs(api.EventState))
	run := testRun(store.RunIDFor(sw.Jobs[0], 1), "a1")
	run.JobID, run.SweepID = sw.Jobs[0], sw.ID

	filler := fillDisk(t, dir)
	full := time.Now()

	// The agent reports its four combinations and the run's end while the
	// disk is full, retrying as a real agent does.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	published := make(chan error, 1)
	go func() {
		var msgs []protocol.ResultMessage
		for _, size := range []string{"480p", "720p"} {
			for _, cams := range []int{1, 2} {
				msgs = append(msgs, protocol.ResultMessage{Schema: 1, AgentID: "a1", Run: run, Combination: testCombo(size, cams)})
			}
		}
		final := run
		final.Status, final.FinishedAt = protocol.RunCompleted, time.Now().UTC()
		msgs = append(msgs, protocol.ResultMessage{Schema: 1, AgentID: "a1", Run: final, Final: true, Expected: 4})
		for _, m := range msgs {
			id := protocol.ResultMsgID(run.ID, "final")
			if m.Combination != nil {
				id = protocol.ResultMsgID(run.ID, m.Combination.ComboKey.String())
			}
			if err := publishUntilStored(ctx, a.js, protocol.AgentSubject("a1", protocol.KindResult), m, id); err != nil {
				published <- err
				return
			}
		}
		published <- nil
	}()

	// Polled: the controller emits no event for its own health. The store
	// (bbolt, on the same disk) fails first; JetStream's write error must
	// show too.
	var health map[string]any
	var notOK time.Duration
	for {
		code, h := getHealth(t, c)
		health = h
		if code != http.StatusOK && notOK == 0 {
			notOK = time.Since(full)
			if h["status"] == "ok" {
				t.Errorf("health answers %d with status ok", code)
			}
		}
		if code != http.StatusOK && strings.Contains(fmt.Sprint(h["problems"]), "component:jetstream") {
			break
		}
		if time.Since(full) > 30*time.Second {
			t.Fatalf("30 s after the disk filled, /api/health does not report JetStream's write error: %v", health)
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("health not ok %.1f s and naming JetStream %.1f s after the disk filled: %v", notOK.Seconds(), time.Since(full).Seconds(), health)
	if health["status"] != api.HealthFailing || health["jetstream"] == "ok" {
		t.Errorf("health on a full disk: %v, want failing with jetstream not ok", health)
	}

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	freed := time.Now()
	if err := <-published; err != nil {
		t.Fatalf("after space returned: %v", err)
	}
	// A message the store failed to take comes back after its redelivery
	// delay (up to 30 s), so the run is polled with a deadline.
	var got protocol.Run
	for {
		code := getJSON(t, c.HTTPURL()+"/api/runs/"+run.ID, &got)
		if code == http.StatusOK && got.Status == protocol.RunCompleted && len(got.Combinations) == 4 {
			break
		}
		if time.Since(freed) > 90*time.Second {
			t.Fatalf("90 s after space returned: run %d, status %s, %d combinations, want completed with 4", code, got.Status, len(got.Combinations))
		}
		time.Sleep(200 * time.Millisecond)
	}
	stored := time.Since(freed)
	for _, cb := range got.Combinations {
		if len(cb.Requests) != 2 {
			t.Errorf("combination %s: %d request records, want 2", cb.ComboKey, len(cb.Requests))
		}
	}
	var healthy time.Duration
	for {
		// The test's agent sends no heartbeats, so it may be reported
		// silent by now; nothing else may remain.
		_, h := getHealth(t, c)
		if h["jetstream"] == "ok" && h["ingest"] == "ok" && !strings.Contains(fmt.Sprint(h["problems"]), "component:jetstream") &&
			!strings.Contains(fmt.Sprint(h["problems"]), "component:store") {
			healthy = time.Since(freed)
			break
		}
		if time.Since(freed) > 60*time.Second {
			t.Fatalf("60 s after space returned, health still reports %v", h)
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("results stored %.1f s and health clear %.1f s after space returned", stored.Seconds(), healthy.Seconds())
}
