package streams

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/vlmfleet/vlmfleet/protocol"
)

// CheckReplicas says which of the controller's streams have fewer current
// copies than configured, nil when none. Only a cluster keeps copies; the
// check is three stream lookups, made at JetStream's check interval.
func (k *Keeper) CheckReplicas(ctx context.Context) error {
	var short []string
	for _, name := range []string{protocol.StreamJobs, protocol.StreamEvents, AdvisoriesStream} {
		ictx, cancel := context.WithTimeout(ctx, CheckEvery)
		s, err := k.js.Stream(ictx, name)
		cancel()
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			short = append(short, fmt.Sprintf("%s: %v", name, err))
			continue
		}
		if why := shortOfCopies(s.CachedInfo(), k.opt.StreamReplicas); why != "" {
			short = append(short, why)
		}
	}
	if len(short) == 0 {
		return nil
	}
	return fmt.Errorf("fewer current copies than --stream-replicas %d: %s", k.opt.StreamReplicas, strings.Join(short, "; "))
}

// shortOfCopies says how a stream falls short of want current copies (its
// leader and each replica that is current and online), "" when it does not.
func shortOfCopies(info *jetstream.StreamInfo, want int) string {
	name := info.Config.Name
	if info.Cluster == nil {
		return fmt.Sprintf("%s: the server says nothing of its copies", name)
	}
	current := 0
	var missing []string
	if info.Cluster.Leader != "" {
		current++
	} else {
		missing = append(missing, "no leader")
	}
	for _, p := range info.Cluster.Replicas {
		switch {
		case p.Offline:
			missing = append(missing, p.Name+" offline")
		case !p.Current:
			// A killed node stays "not current" rather than "offline"
			// for minutes; when it was last heard from tells them apart.
			missing = append(missing, fmt.Sprintf("%s not current: last heard from %s ago, %d operations behind",
				p.Name, p.Active.Round(time.Second), p.Lag))
		default:
			current++
		}
	}
	if current >= want {
		return ""
	}
	if len(missing) == 0 {
		missing = append(missing, fmt.Sprintf("the stream is configured with %d", info.Config.Replicas))
	}
	return fmt.Sprintf("%s: %d of %d copies current (%s)", name, current, want, strings.Join(missing, ", "))
}
