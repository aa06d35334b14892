package outbox

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"
	"testing"
	"time"
)

// A sender goes on past the context it was started with, and Stop sends
// what was spooled before it returns, a publish sent again after its
// back-off included.
func TestSenderOutlivesItsContextAndStopDrains(t *testing.T) {
	o, _ := open(t, t.TempDir(), 0)
	s := newSink()
	var failed atomic.Bool
	publish := func(ctx context.Context, subject, msgID string, data []byte) error {
		if failed.CompareAndSwap(false, true) {
			return errors.New("no responders") // the first attempt only
		}
		return s.publish(ctx, subject, msgID, data)
	}
	ctx, cancel := context.WithCancel(testContext(t))
	sender := o.StartSending(ctx, publish)
	cancel()
	appendN(t, o, 1, 3)
	sender.Stop(testContext(t), time.Minute)
	if got := s.messages(); !slices.Equal(got, want(1, 3)) {
		t.Errorf("sent %q, want %q", got, want(1, 3))
	}
	if n, _ := o.Len(); n != 0 {
		t.Errorf("%d messages left in the spool after a drain over a working link", n)
	}
}

// Over a link that is down, Stop waits no longer than its drain, says what
// it leaves, and the messages stay in the spool for the next start.
func TestSenderStopLeavesWhatItCouldNotSend(t *testing.T) {
	dir := t.TempDir()
	o, logs := open(t, dir, 0)
	s := newSink()
	s.setDown(true)
	sender := o.StartSending(testContext(t), s.publish)
	appendN(t, o, 1, 2)
	start := time.Now()
	sender.Stop(testContext(t), 50*time.Millisecond)
	if took := time.Since(start); took > 20*time.Second {
		t.Errorf("Stop took %v over a link that is down, want about its 50ms drain", took)
	}
	if n, _ := o.Len(); n != 2 {
		t.Errorf("%d messages in the spool after the stop, want the 2 not sent", n)
	}
	if got := records(t, dir); got != 2 {
		t.Errorf("%d records on disk after the stop, want 2", got)
	}
	waitLog(t, logs, "stopping with messages not yet acknowledged")
}
