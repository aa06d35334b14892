package controller

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// What a cluster answers while it elects a leader is asked again at start;
// a refusal is not.
func TestJetStreamInPassing(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{fmt.Errorf("create stream: %w", context.DeadlineExceeded), true},
		{fmt.Errorf("create stream: %w", nats.ErrTimeout), true},
		{fmt.Errorf("create stream: %w", nats.ErrNoResponders), true},
		{fmt.Errorf("create stream: %w", &jetstream.APIError{Code: 503, ErrorCode: 10008, Description: "JetStream system temporarily unavailable"}), true},
		{&jetstream.APIError{Code: 500, ErrorCode: 10009, Description: "JetStream cluster can not handle request"}, true},
		{fmt.Errorf("create stream: %w", &jetstream.APIError{Code: 500, ErrorCode: 10074, Description: "replicas > 1 not supported in non-clustered mode"}), false},
		{fmt.Errorf("create stream: %w", jetstream.ErrJetStreamNotEnabledForAccount), false},
		{errors.New("anything else"), false},
		{context.Canceled, false},
	} {
		if got := jetStreamInPassing(tc.err); got != tc.want {
			t.Errorf("%v: asked again %v, want %v", tc.err, got, tc.want)
		}
	}
}
