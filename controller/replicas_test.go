package controller

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

// --stream-replicas takes 1..5, and above 1 only with an external server:
// the embedded one is a single node and could never keep the copies.
func TestStreamReplicasOption(t *testing.T) {
	for _, tc := range []struct {
		opt  Options
		says string // "" when New accepts it
	}{
		{Options{}, ""},
		{Options{StreamReplicas: 1}, ""},
		{Options{StreamReplicas: 3, NATSURL: "nats://a:4222,nats://b:4222,nats://c:4222"}, ""},
		{Options{StreamReplicas: 5, NATSURL: "nats://a:4222"}, ""},
		{Options{StreamReplicas: -1, NATSURL: "nats://a:4222"}, "--stream-replicas -1: allowed 1..5"},
		{Options{StreamReplicas: 6, NATSURL: "nats://a:4222"}, "--stream-replicas 6: allowed 1..5"},
		{Options{StreamReplicas: 3}, "--stream-replicas 3 needs a NATS cluster"},
	} {
		tc.opt.DataDir = t.TempDir()
		c, err := New(tc.opt)
		if err == nil {
			_ = c.Close()
		}
		switch {
		case tc.says == "" && err != nil:
			t.Errorf("%+v: %v", tc.opt, err)
		case tc.says != "" && (err == nil || !strings.Contains(err.Error(), tc.says)):
			t.Errorf("replicas %d, url %q: error %v, want one saying %q", tc.opt.StreamReplicas, tc.opt.NATSURL, err, tc.says)
		}
	}
}

// The streams are made with the configured replica count; a server that
// refuses to change an existing stream's count (a single server asked for
// 3) fails the start with an error naming the stream and both counts.
func TestStreamReplicasOnAServerThatRefusesThem(t *testing.T) {
	ns := startExternalNATS(t)
	c := startControllerWith(t, Options{DataDir: t.TempDir(), NATSURL: ns.ClientURL()})
	for _, name := range []string{JobsStreamConfig().Name, EventsStreamConfig().Name, AdvisoriesStream} {
		s, err := c.js.Stream(context.Background(), name)
		if err != nil {
			t.Fatal(err)
		}
		if r := s.CachedInfo().Config.Replicas; r != 1 {
			t.Errorf("stream %s has %d replicas, want 1", name, r)
		}
	}
	_ = c.Close()

	c2, err := New(Options{DataDir: t.TempDir(), NATSURL: ns.ClientURL(), StreamReplicas: 3, HTTPAddr: "127.0.0.1:0",
		Log: zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)})
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err = c2.Start(ctx)
	if err == nil || !strings.Contains(err.Error(), "has 1 replicas and --stream-replicas asks for 3; the server refused the change") {
		t.Fatalf("start with 3 replicas on one server: %v, want the refusal named", err)
	}
}
