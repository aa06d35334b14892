package ingest

import (
	"errors"
	"fmt"
	"time"

	"github.com/vlmfleet/vlmfleet/controller/store"
	"github.com/vlmfleet/vlmfleet/internal/backoff"
)

// Action is what to do with a message after trying to store it.
type Action int

// The actions: acknowledge, refuse for good (recorded and terminated), or
// retry later.
const (
	Ack Action = iota
	Reject
	Retry
)

// Disposition is what to do with a message after trying to store it.
type Disposition struct {
	Action Action
	Reason string        // Reject: what is recorded
	Delay  time.Duration // Retry: when to try again
}

// Settle decides a message's fate from the result of storing it on its
// delivered-th delivery. Only errors that may pass (a full disk, a closing
// database) are retried; retrying one that repeats identically would hold
// a slot of MaxAckPending for nothing.
func Settle(err error, delivered uint64) Disposition {
	var rej *store.RejectError
	switch {
	case err == nil:
		return Disposition{Action: Ack}
	case errors.As(err, &rej):
		return Disposition{Action: Reject, Reason: rej.Reason}
	case store.Permanent(err):
		return Disposition{Action: Reject, Reason: "the store refuses it: " + err.Error()}
	case delivered >= MaxDeliveries:
		return Disposition{Action: Reject, Reason: fmt.Sprintf("storing failed on all %d deliveries, last: %v", delivered, err)}
	default:
		return Disposition{Action: Retry, Delay: NakDelay(delivered)}
	}
}

// NakDelay spaces the redeliveries of a message the store failed to take.
// JetStream does the waiting (NakWithDelay), so the delay follows from the
// delivery count instead of a loop's state. It grows to half a minute, not
// the agents' few seconds: a store failing for that long (a full disk) waits
// for an operator, and retrying faster would only fill the log.
func NakDelay(delivered uint64) time.Duration {
	return backoff.Policy{First: 500 * time.Millisecond, Max: 30 * time.Second}.Delay(int(min(delivered, MaxDeliveries)))
}
