package controller

import (
	"testing"
	"time"
)

// The events stream may deliver a hello again after its process said it
// stopped (its acknowledgement came too late), and deliver a hello of an
// earlier start after the next start's heartbeats. Neither may take the id
// from the process that runs now, nor be taken for a second process.
func TestLateHellosDoNotHoldAnAgentID(t *testing.T) {
	const timeout = 15 * time.Second
	t0 := time.Date(2026, 12, 7, 1, 0, 0, 0, time.UTC)
	first := instanceClaim{instance: "aaaa", spoolLock: "vm:/tmp/1", hostname: "vm", startedAt: t0}
	second := instanceClaim{instance: "bbbb", spoolLock: "vm:/tmp/2", hostname: "vm", startedAt: t0.Add(2 * time.Second)}
	beat := func(c instanceClaim) instanceClaim {
		return instanceClaim{instance: c.instance, spoolLock: c.spoolLock}
	}

	ai := newAgentInstances()
	steps := []struct {
		what  string
		claim instanceClaim
		at    time.Duration
		want  claimVerdict
	}{
		{"the first process's hello", first, 0, claimHeld},
		{"its heartbeat", beat(first), time.Second, claimHeld},
		{"its hello delivered again after it stopped", first, 1500 * time.Millisecond, claimStale},
		{"the restart's hello", second, 2 * time.Second, claimHeld},
		{"the restart's heartbeat", beat(second), 2100 * time.Millisecond, claimHeld},
		{"the first start's hello, delivered late", first, 3 * time.Second, claimStale},
		{"the restart's next heartbeat", beat(second), 4 * time.Second, claimHeld},
	}
	for i, s := range steps {
		if i == 2 {
			ai.release("orin-1", first.instance)
		}
		if _, got := ai.claim("orin-1", s.claim, t0.Add(s.at), timeout, nil); got != s.want {
			t.Errorf("%s: verdict %d, want %d", s.what, got, s.want)
		}
	}
	if d := ai.duplicates("orin-1", t0.Add(4*time.Second), timeout); len(d) != 0 {
		t.Errorf("duplicates %+v, want none: no two processes ran at once", d)
	}

	// A second process that does run beside the holder is still refused.
	third := instanceClaim{instance: "cccc", spoolLock: "pi:/tmp/3", hostname: "pi", startedAt: t0.Add(5 * time.Second)}
	holder, got := ai.claim("orin-1", third, t0.Add(5*time.Second), timeout, nil)
	if got != claimRefused || holder.instance != second.instance {
		t.Errorf("a process beside the holder: verdict %d, holder %q; want refused, held by %q", got, holder.instance, second.instance)
	}
	// It is shown until it has been silent for the timeout: then it has
	// stopped.
	if d := ai.duplicates("orin-1", t0.Add(6*time.Second), timeout); len(d) != 1 || d[0].Instance != third.instance || d[0].Hostname != "pi" {
		t.Errorf("duplicates while the refused process is heard: %+v, want cccc on pi", d)
	}
	if d := ai.duplicates("orin-1", t0.Add(5*time.Second+timeout), timeout); len(d) != 0 {
		t.Errorf("duplicates once the refused process was silent for %s: %+v, want none", timeout, d)
	}
}
