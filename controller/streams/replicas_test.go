package streams

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// A stream is short of copies when its leader and current replicas number
// fewer than configured: a node down, one behind, or no leader at all.
func TestShortOfCopies(t *testing.T) {
	peer := func(name string, current, offline bool, lag uint64) *jetstream.PeerInfo {
		return &jetstream.PeerInfo{Name: name, Current: current, Offline: offline, Lag: lag, Active: 12300 * time.Millisecond}
	}
	info := func(leader string, peers ...*jetstream.PeerInfo) *jetstream.StreamInfo {
		return &jetstream.StreamInfo{Config: jetstream.StreamConfig{Name: "S", Replicas: 3},
			Cluster: &jetstream.ClusterInfo{Leader: leader, Replicas: peers}}
	}
	for _, tc := range []struct {
		info *jetstream.StreamInfo
		want int
		says string // "" when not short
	}{
		{info("n1", peer("n2", true, false, 0), peer("n3", true, false, 0)), 3, ""},
		{info("n1", peer("n2", true, false, 0), peer("n3", false, true, 0)), 3, "S: 2 of 3 copies current (n3 offline)"},
		{info("n1", peer("n2", false, false, 42), peer("n3", true, false, 0)), 3, "S: 2 of 3 copies current (n2 not current: last heard from 12s ago, 42 operations behind)"},
		{info("", peer("n2", true, false, 0), peer("n3", true, false, 0)), 3, "S: 2 of 3 copies current (no leader)"},
		{info("n1", peer("n2", true, false, 0)), 3, "S: 2 of 3 copies current (the stream is configured with 3)"},
		{info("n1", peer("n2", true, false, 0), peer("n3", false, true, 0)), 2, ""},
		{&jetstream.StreamInfo{Config: jetstream.StreamConfig{Name: "S"}}, 3, "S: the server says nothing of its copies"},
	} {
		if got := shortOfCopies(tc.info, tc.want); got != tc.says {
			t.Errorf("%+v, %d copies wanted: %q, want %q", tc.info.Cluster, tc.want, got, tc.says)
		}
	}
}
