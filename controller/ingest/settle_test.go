package ingest

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	bolterrors "go.etcd.io/bbolt/errors"

	"github.com/vlmfleet/vlmfleet/controller/store"
)

func TestSettleRetriesOnlyTransientErrors(t *testing.T) {
	transient := errors.New("store: result for run r1: write: no space left on device")
	cases := []struct {
		name      string
		err       error
		delivered uint64
		want      Action
		reason    string
	}{
		{"stored", nil, 1, Ack, ""},
		{"refused by the store", &store.RejectError{Reason: "run r1 belongs to agent a2"}, 1, Reject, "belongs to agent a2"},
		{"refused by bbolt", fmt.Errorf("store: agent a1: %w", bolterrors.ErrValueTooLarge), 1, Reject, "value too large"},
		{"transient, first delivery", transient, 1, Retry, ""},
		{"transient, next to last", transient, MaxDeliveries - 1, Retry, ""},
		{"transient, last delivery", transient, MaxDeliveries, Reject, "no space left"},
	}
	for _, tc := range cases {
		d := Settle(tc.err, tc.delivered)
		if d.Action != tc.want || !strings.Contains(d.Reason, tc.reason) {
			t.Errorf("%s: got %+v, want action %d with reason containing %q", tc.name, d, tc.want, tc.reason)
		}
		if d.Action == Retry && d.Delay <= 0 {
			t.Errorf("%s: retry without delay", tc.name)
		}
	}
}

func TestRedeliveryWaitsGrowToHalfAMinute(t *testing.T) {
	if d := NakDelay(1); d != 500*time.Millisecond {
		t.Errorf("first redelivery in %v, want 500ms", d)
	}
	if a, b := NakDelay(2), NakDelay(3); a != time.Second || b != 2*time.Second {
		t.Errorf("second and third redelivery in %v and %v, want 1s and 2s", a, b)
	}
	if d := NakDelay(MaxDeliveries); d != 30*time.Second {
		t.Errorf("last redelivery in %v, want 30s", d)
	}
}

func TestConsumerGivesUpAfterFiniteDeliveries(t *testing.T) {
	cfg := EventsConsumerConfig()
	if cfg.MaxDeliver != MaxDeliveries || cfg.MaxDeliver <= 0 {
		t.Fatalf("MaxDeliver %d, want %d: a message that never stores must not hold an ack slot for ever", cfg.MaxDeliver, MaxDeliveries)
	}
}
