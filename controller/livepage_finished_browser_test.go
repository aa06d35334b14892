package controller

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/vlmfleet/vlmfleet/protocol"
)

// The live page keeps finished work visible: a job that ends while the
// page is open stays listed under "Recently finished" with how it ended
// and its sweep, and so do jobs that ended before the page was opened.
func TestLivePageKeepsFinishedJobs(t *testing.T) {
	path := chromium(t)
	c := startController(t, t.TempDir())
	ev, a := announced(t, c, "orin-1", "qwen-q8")
	done := submitJobs(t, c, "orin-1")[0]
	a.state(t, done, protocol.JobCompleted, 1, true)
	ev.waitFor(t, 1, stateIs(done, protocol.JobCompleted))

	poll, text := openLive(t, path, c.HTTPURL())
	poll(`document.getElementById("conn").textContent === "live"`)
	poll(`document.getElementById("finished").textContent.includes(` + jsString(done) + `)`)

	later := submitJobs(t, c, "orin-1")[0]
	a.state(t, later, protocol.JobRunning, 1, true)
	poll(`document.getElementById("jobs").textContent.includes(` + jsString(later) + `)`)
	a.state(t, later, protocol.JobFailed, 1, true)
	poll(`document.getElementById("finished").textContent.includes(` + jsString(later) + `)`)
	// Each with a link to its sweep.
	poll(`document.querySelector('#finished tr[data-job=` + jsString(later) + `] a[href^="/sweeps/sw-"]') !== null`)
	got := text("#finished")
	for _, want := range []string{done, "completed", later, "failed", "qwen-q8"} {
		if !contains(got, want) {
			t.Errorf("finished %q lacks %q", got, want)
		}
	}
	// The newest first.
	if i, j := strings.Index(got, later), strings.Index(got, done); i > j {
		t.Errorf("finished %q: %s ended last and is not first", got, later)
	}
}

// jsString is s as a JavaScript string literal.
func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
