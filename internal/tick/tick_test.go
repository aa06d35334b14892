package tick

import (
	"context"
	"testing"
	"time"
)

func TestEveryCallsUntilTheContextEnds(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	start := time.Now()
	var calls []time.Duration
	Every(ctx, 10*time.Millisecond, func() {
		calls = append(calls, time.Since(start))
		if len(calls) == 3 {
			cancel()
		}
	})
	if len(calls) != 3 {
		t.Fatalf("%d calls, want 3 (the last one cancels)", len(calls))
	}
	if calls[0] < 10*time.Millisecond {
		t.Errorf("first call after %v, want one interval", calls[0])
	}
}

func TestEveryReturnsAtOnceForAnEndedContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	Every(ctx, time.Millisecond, func() { t.Error("f called after the context ended") })
}
