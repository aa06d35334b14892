package telemetry

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/vlmfleet/vlmfleet/protocol"
)

// First runs the sampler until its first sample, for at most timeout.
func (s *Sampler) First(ctx context.Context, timeout time.Duration) (*protocol.TelemetrySample, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	got := make(chan protocol.TelemetrySample, 1)
	runErr := s.Run(ctx, func(smp protocol.TelemetrySample) {
		select {
		case got <- smp:
			cancel()
		default:
		}
	})
	select {
	case smp := <-got:
		return &smp, nil
	default:
	}
	if runErr != nil {
		return nil, runErr
	}
	if err := ctx.Err(); errors.Is(err, context.DeadlineExceeded) {
		return nil, fmt.Errorf("no sample from %s within %v", s.Source(), timeout)
	}
	return nil, fmt.Errorf("no sample from %s: %w", s.Source(), context.Cause(ctx))
}
