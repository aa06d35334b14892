package client

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/vlmfleet/vlmfleet/controller/api"
	"github.com/vlmfleet/vlmfleet/protocol"
)

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// WaitSweep returns when the sweep's last job ends, driven by the events
// (the poll is an hour), and hands on only the events of its jobs.
func TestWaitSweepFollowsEvents(t *testing.T) {
	l := newLab(t)
	subscribed := make(chan struct{}, 1)
	hc := &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		resp, err := http.DefaultTransport.RoundTrip(r)
		if err == nil && r.URL.Path == "/api/events" {
			select {
			case subscribed <- struct{}{}:
			default:
			}
		}
		return resp, err
	})}
	cl, err := New(l.Ctl.HTTPURL(), WithHTTPClient(hc), WithToken(l.Ctl.APIToken()))
	if err != nil {
		t.Fatal(err)
	}
	sw, err := cl.SubmitSweep(l.Ctx, smallSweep())
	if err != nil {
		t.Fatal(err)
	}
	job, err := cl.Job(l.Ctx, sw.Jobs[0])
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		v   api.SweepView
		err error
	}
	done := make(chan result, 1)
	events := make(chan Event, 16)
	go func() {
		v, err := cl.WaitSweep(l.Ctx, sw.ID, WaitOptions{Poll: time.Hour, OnEvent: func(ev Event) { events <- ev }})
		done <- result{v, err}
	}()
	// The state goes through JetStream and the store, progress straight
	// over NATS: each is awaited before the next is sent.
	expect := func(kind string) {
		t.Helper()
		select {
		case ev := <-events:
			var p struct {
				JobID string `json:"job_id"`
			}
			if ev.Kind != kind || ev.Decode(&p) != nil || p.JobID != job.ID {
				t.Fatalf("event %s %s, want %s of %s", ev.Kind, ev.Data, kind, job.ID)
			}
		case <-l.Ctx.Done():
			t.Fatalf("no %s event", kind)
		}
	}
	select {
	case <-subscribed:
	case <-l.Ctx.Done():
		t.Fatal("WaitSweep never opened the event stream")
	}
	l.report(t, job, protocol.JobAccepted)
	expect(api.EventState)
	for _, id := range []string{"another-job", job.ID} {
		p, _ := json.Marshal(protocol.Progress{Schema: 1, AgentID: "a1", JobID: id, Phase: protocol.PhaseMeasure, Done: 1, Total: 2, Time: time.Now()})
		if err := l.NC.Publish(protocol.AgentSubject("a1", protocol.KindProgress), p); err != nil {
			t.Fatal(err)
		}
	}
	expect(api.EventProgress)
	l.report(t, job, protocol.JobCompleted)
	expect(api.EventState)
	select {
	case r := <-done:
		if r.err != nil || !r.v.Status.Done || r.v.Status.States[protocol.JobCompleted] != 1 {
			t.Fatalf("WaitSweep: %+v, %v", r.v.Status, r.err)
		}
	case <-l.Ctx.Done():
		t.Fatal("WaitSweep did not return when the job completed")
	}
	if len(events) != 0 {
		t.Errorf("%d more events", len(events))
	}
	// A sweep already done returns at once; an unknown one is an error.
	if v, err := cl.WaitSweep(l.Ctx, sw.ID, WaitOptions{}); err != nil || !v.Status.Done {
		t.Errorf("done sweep: %+v, %v", v.Status, err)
	}
	if _, err := cl.WaitSweep(l.Ctx, "sw-nope", WaitOptions{}); err == nil {
		t.Error("unknown sweep: no error")
	}
}
