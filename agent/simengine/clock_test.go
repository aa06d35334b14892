package simengine

import (
	"fmt"
	"testing"
)

// TestLoopOwes follows a loop of 5 requests on 2 cameras through what the
// simulator sees: it owes one request per camera at the start, a camera's
// next one after each answer while requests are left, none while it drains.
func TestLoopOwes(t *testing.T) {
	l := &loop{total: 5, cameras: 2}
	step := func(what string, arrive, end, want int) {
		t.Helper()
		l.arrived += arrive
		l.running += arrive - end
		if got := l.owed(); got != want {
			t.Fatalf("%s: owes %d, want %d", what, got, want)
		}
	}
	step("nothing yet", 0, 0, 2)
	step("first camera's request", 1, 0, 1)
	step("second camera's request", 1, 0, 0)
	step("an answer ends", 0, 1, 1)
	step("its camera's next request", 1, 0, 0)
	step("both answers end at once", 0, 2, 2) // two requests left
	step("one camera's next request", 1, 0, 1)
	step("the other's, the loop's last", 1, 0, 0)
	step("an answer ends with no request left", 0, 1, 0)
	step("done", 0, 1, 0)

	// Two answers end together with one request left: one camera takes
	// it, the other has nothing to send and is not waited for.
	l = &loop{total: 3, cameras: 2, arrived: 2, running: 2}
	step("both answers end, one request left", 0, 2, 1)
	step("one camera sends it", 1, 0, 0)

	// More cameras than requests: only as many are owed as there are requests.
	if got := (&loop{total: 2, cameras: 4}).owed(); got != 2 {
		t.Errorf("2 requests on 4 cameras: owes %d, want 2", got)
	}
}

// TestOpenLoopOwes follows a sustained level's open loop of 2 cameras: it
// owes each camera's next request until the camera has sent its last,
// and is over once both last requests have ended.
func TestOpenLoopOwes(t *testing.T) {
	l := &loop{cameras: 2, open: true}
	step := func(what string, arrive, end, finish, want int) {
		t.Helper()
		l.arrived += arrive
		l.running += arrive - end
		l.finished += finish
		if got := l.owed(); got != want {
			t.Fatalf("%s: owes %d, want %d", what, got, want)
		}
	}
	step("nothing yet", 0, 0, 0, 2)
	step("both cameras send", 2, 0, 0, 0)
	for i := range 10 { // no count bounds an open loop
		step(fmt.Sprintf("answer %d ends", i), 0, 1, 0, 1)
		step(fmt.Sprintf("its camera's next %d", i), 1, 0, 0, 0)
	}
	step("a camera's last request ends", 0, 1, 1, 0)
	if l.over() {
		t.Fatal("over with a request running")
	}
	step("the other's last ends", 0, 1, 1, 0)
	if !l.over() {
		t.Error("not over after every camera's last request ended")
	}
}
