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
