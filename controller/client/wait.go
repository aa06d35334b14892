package client

import (
	"context"
	"encoding/json"
	"time"

	"github.com/vlmfleet/vlmfleet/controller/api"
	"github.com/vlmfleet/vlmfleet/internal/backoff"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// WaitOptions tune WaitSweep.
type WaitOptions struct {
	// OnEvent gets every progress and state event of the sweep's jobs, in
	// order, from WaitSweep's goroutine.
	OnEvent func(Event)
	// OnError hears of a failed status check; waiting goes on.
	OnError func(error)
	// Poll is how often the status is checked besides a job's end (5 s).
	Poll time.Duration
}

// WaitSweep follows the sweep until every job has ended and returns it as
// it ended. The event stream drives it: a job's end triggers a status
// check. A broken stream is reopened with backoff, and the status is also
// checked every Poll, to make up for events lost meanwhile. It returns
// early only when ctx ends or the first status check fails.
func (c *Client) WaitSweep(ctx context.Context, id string, o WaitOptions) (api.SweepView, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	kinds := []string{api.EventProgress, api.EventState}
	// The stream is open before the first check, so that no job can end
	// unseen between the two; if it cannot open, the pump keeps trying.
	stream, _ := c.Events(ctx, kinds...)
	events := make(chan Event, 64)
	go c.pump(ctx, stream, kinds, events)
	v, err := c.Sweep(ctx, id)
	if err != nil || v.Status.Done {
		return v, err
	}
	mine := map[string]bool{}
	for _, j := range v.Jobs {
		mine[j] = true
	}
	if o.Poll <= 0 {
		o.Poll = 5 * time.Second
	}
	poll := time.NewTicker(o.Poll)
	defer poll.Stop()
	for {
		select {
		case <-ctx.Done():
			return v, ctx.Err()
		case <-poll.C:
		case ev := <-events:
			var job struct {
				JobID string            `json:"job_id"`
				State protocol.JobState `json:"state"`
			}
			if json.Unmarshal(ev.Data, &job) != nil || !mine[job.JobID] {
				continue
			}
			if o.OnEvent != nil {
				o.OnEvent(ev)
			}
			if ev.Kind != api.EventState || !job.State.Terminal() {
				continue
			}
		}
		now, err := c.Sweep(ctx, id)
		switch {
		case err != nil && ctx.Err() == nil && o.OnError != nil:
			o.OnError(err)
		case err == nil && now.Status.Done:
			return now, nil
		}
	}
}

// pump hands the stream's events to ch until ctx ends, opening a new
// stream (s nil: none is open yet) with backoff when one breaks.
func (c *Client) pump(ctx context.Context, s *EventStream, kinds []string, ch chan<- Event) {
	b := backoff.Default.Start()
	for ctx.Err() == nil {
		var err error
		if s == nil {
			s, err = c.Events(ctx, kinds...)
		}
		var ev Event
		if err == nil {
			if ev, err = s.Next(); err != nil {
				s.Close()
				s = nil
			}
		}
		if err != nil {
			_ = b.Wait(ctx)
			continue
		}
		b.Reset()
		select {
		case ch <- ev:
		case <-ctx.Done():
		}
	}
	if s != nil {
		s.Close()
	}
}
