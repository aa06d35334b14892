package backoff

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestWaitsDoubleUpToMax(t *testing.T) {
	b := Policy{First: time.Millisecond, Max: 5 * time.Millisecond}.Start()
	var got []time.Duration
	for range 5 {
		got = append(got, b.Next())
	}
	want := []time.Duration{1, 2, 4, 5, 5}
	for i := range want {
		if got[i] != want[i]*time.Millisecond {
			t.Fatalf("waits %v, want %v ms", got, want)
		}
	}
	b.Reset()
	if d := b.Next(); d != time.Millisecond {
		t.Errorf("after Reset the wait is %v, want 1ms", d)
	}
}

func TestRetryUntilSuccess(t *testing.T) {
	n := 0
	err := Policy{First: time.Microsecond, Max: time.Microsecond}.Retry(context.Background(), func(attempt int) error {
		n++
		if attempt != n {
			t.Errorf("attempt %d, want %d", attempt, n)
		}
		if n < 3 {
			return errors.New("not yet")
		}
		return nil
	})
	if err != nil || n != 3 {
		t.Fatalf("err %v after %d tries, want nil after 3", err, n)
	}
}

func TestRetryStopsOnPermanentAndOnContext(t *testing.T) {
	boom := errors.New("boom")
	n := 0
	err := Default.Retry(context.Background(), func(int) error { n++; return Permanent(boom) })
	if err != boom || n != 1 {
		t.Errorf("permanent: err %v after %d tries, want boom after 1", err, n)
	}
	ctx, cancel := context.WithCancel(context.Background())
	last := errors.New("down")
	err = Policy{First: time.Hour}.Retry(ctx, func(int) error { cancel(); return last })
	if !errors.Is(err, context.Canceled) || !errors.Is(err, last) {
		t.Errorf("cancelled: err %v, want both context.Canceled and the last error", err)
	}
}

// Delay(n) is the wait a Backoff makes after n failed tries, so a wait
// handed to JetStream grows the same way as one slept in a loop.
func TestDelayMatchesTheLoopsWaits(t *testing.T) {
	p := Policy{First: 500 * time.Millisecond, Max: 30 * time.Second}
	b := p.Start()
	for attempt := 1; attempt <= 12; attempt++ {
		if got, want := p.Delay(attempt), b.Next(); got != want {
			t.Errorf("Delay(%d) = %v, the loop waits %v", attempt, got, want)
		}
	}
	if d := p.Delay(1 << 40); d != p.Max {
		t.Errorf("Delay of a huge attempt = %v, want Max %v", d, p.Max)
	}
	if d := (Policy{}).Delay(1); d != Default.First {
		t.Errorf("zero Policy's first delay = %v, want Default's %v", d, Default.First)
	}
}
