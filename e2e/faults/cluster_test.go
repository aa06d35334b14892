package faults

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/vlmfleet/vlmfleet/internal/backoff"
	"github.com/vlmfleet/vlmfleet/internal/testutil"
)

// natsCluster is three nats-server processes routed into one cluster,
// each with JetStream on its own store and the accounts of an external
// server (natsAccounts): what docs/scaling.md shows an operator.
type natsCluster struct {
	t     *testing.T
	ctx   context.Context
	nodes []*clusterNode
}

// clusterNode is one server of the cluster; name is its server_name, the
// name JetStream gives a stream's leader by.
type clusterNode struct {
	name    string
	dir     string
	conf    string
	addr    string // clients
	monitor string // HTTP monitoring (/healthz, /jsz)
	proc    *proc
}

// clusterRoutePassword is what the nodes' routes sign in to each other with.
const clusterRoutePassword = "pw-route"

// newNATSCluster starts a 3-node cluster whose accounts admit the
// controller and agents, and returns once it has formed and elected a
// JetStream meta leader.
func newNATSCluster(t *testing.T, ctx context.Context, agents []string) *natsCluster {
	c := configureNATSCluster(t, ctx, agents)
	for _, n := range c.nodes {
		c.startNode(n)
	}
	c.waitFormed()
	return c
}

// configureNATSCluster writes the configuration of a 3-node cluster whose
// accounts admit the controller and agents, and starts none of its nodes.
func configureNATSCluster(t *testing.T, ctx context.Context, agents []string) *natsCluster {
	c := &natsCluster{t: t, ctx: ctx}
	routes := make([]string, 3)
	for i := range 3 {
		n := &clusterNode{name: fmt.Sprintf("n%d", i+1), dir: t.TempDir(),
			addr: testutil.ClosedAddr(t), monitor: testutil.ClosedAddr(t)}
		c.nodes = append(c.nodes, n)
		routes[i] = testutil.ClosedAddr(t)
	}
	var routeURLs []string
	for _, r := range routes {
		routeURLs = append(routeURLs, fmt.Sprintf("nats-route://route:%s@%s", clusterRoutePassword, r))
	}
	for i, n := range c.nodes {
		host, port, _ := strings.Cut(n.addr, ":")
		rhost, rport, _ := strings.Cut(routes[i], ":")
		conf := fmt.Sprintf(`server_name: %s
host: %s
port: %s
http: %s
max_payload: 8MB
jetstream { store_dir: %q }
cluster {
  name: vlmfleet
  host: %s
  port: %s
  authorization { user: route, password: %q }
  routes: [ %s ]
}
%s`, n.name, host, port, n.monitor, filepath.Join(n.dir, "js"), rhost, rport, clusterRoutePassword,
			strings.Join(routeURLs, ", "), natsAccounts(agents))
		n.conf = testutil.WriteFile(t, filepath.Join(n.dir, "nats-server.conf"), conf)
	}
	return c
}

// startNode starts (or restarts) one node.
func (c *natsCluster) startNode(n *clusterNode) {
	c.t.Helper()
	n.proc = start(c.t, n.dir, "nats-server-"+n.name, bin.natsServer, "-c", n.conf)
}

// waitListening waits until the node takes client connections, which it
// does before it has a cluster to route them to.
func (c *natsCluster) waitListening(n *clusterNode) {
	c.t.Helper()
	err := poll.Retry(c.ctx, func(int) error {
		if n.proc.Exited() {
			return backoff.Permanent(fmt.Errorf("nats-server %s exited", n.name))
		}
		conn, err := dialTCP(n.addr)
		if err != nil {
			return err
		}
		return conn.Close()
	})
	if err != nil {
		c.t.Fatalf("nats-server %s does not listen on %s: %v", n.name, n.addr, err)
	}
}

// waitFormed waits until every running node is healthy (its /healthz
// checks JetStream, meta group included) and agrees on a meta leader with
// all three peers known.
func (c *natsCluster) waitFormed() {
	c.t.Helper()
	var last string
	err := poll.Retry(c.ctx, func(int) error {
		leaders := map[string]bool{}
		for _, n := range c.nodes {
			if n.proc.Exited() {
				return backoff.Permanent(fmt.Errorf("nats-server %s exited", n.name))
			}
			var h struct {
				Status string `json:"status"`
				Error  string `json:"error"`
			}
			if err := getMonitor(c.ctx, n.monitor, "/healthz", &h); err != nil || h.Status != "ok" {
				last = fmt.Sprintf("%s: healthz %q %s %v", n.name, h.Status, h.Error, err)
				return errors.New(last)
			}
			var jsz server.JSInfo
			if err := getMonitor(c.ctx, n.monitor, "/jsz", &jsz); err != nil {
				last = fmt.Sprintf("%s: jsz %v", n.name, err)
				return errors.New(last)
			}
			if jsz.Meta == nil || jsz.Meta.Leader == "" || jsz.Meta.Size != len(c.nodes) {
				last = fmt.Sprintf("%s: meta group %+v", n.name, jsz.Meta)
				return errors.New(last)
			}
			leaders[jsz.Meta.Leader] = true
		}
		if len(leaders) != 1 {
			last = fmt.Sprintf("nodes name different meta leaders %v", leaders)
			return errors.New(last)
		}
		return nil
	})
	if err != nil {
		c.t.Fatalf("the NATS cluster did not form: %v (last: %s)", err, last)
	}
}

// getMonitor reads one monitoring endpoint into v.
func getMonitor(ctx context.Context, addr, path string, v any) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+path, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	// /healthz answers 503 with a JSON body saying why.
	return json.NewDecoder(resp.Body).Decode(v)
}

// urls is the comma-separated list of the nodes' client URLs, signed in as
// user: what the controller's --nats-url and an agent's nats_url carry.
func (c *natsCluster) urls(user string) string {
	var out []string
	for _, n := range c.nodes {
		out = append(out, "nats://"+user+":"+natsPassword(user)+"@"+n.addr)
	}
	return strings.Join(out, ",")
}

// node is the node of that server name.
func (c *natsCluster) node(name string) *clusterNode {
	for _, n := range c.nodes {
		if n.name == name {
			return n
		}
	}
	c.t.Fatalf("no node %q in the cluster", name)
	return nil
}

// streamInfo looks a stream up as the controller's user, through any node
// that answers.
func (c *natsCluster) streamInfo(stream string) (*jetstream.StreamInfo, error) {
	var info *jetstream.StreamInfo
	err := c.withJetStream(func(ctx context.Context, _ *nats.Conn, js jetstream.JetStream) error {
		s, err := js.Stream(ctx, stream)
		if err == nil {
			info = s.CachedInfo()
		}
		return err
	})
	return info, err
}

// consumerInfo looks a consumer up the same way.
func (c *natsCluster) consumerInfo(stream, consumer string) (*jetstream.ConsumerInfo, error) {
	var info *jetstream.ConsumerInfo
	err := c.withJetStream(func(ctx context.Context, _ *nats.Conn, js jetstream.JetStream) error {
		cons, err := js.Consumer(ctx, stream, consumer)
		if err == nil {
			info = cons.CachedInfo()
		}
		return err
	})
	return info, err
}

// withJetStream runs f on a connection of the controller's user to any
// node that answers, for at most 5 s.
func (c *natsCluster) withJetStream(f func(context.Context, *nats.Conn, jetstream.JetStream) error) error {
	nc, err := nats.Connect(c.urls("controller"), nats.Timeout(2*time.Second))
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(c.ctx, 5*time.Second)
	defer cancel()
	return f(ctx, nc, js)
}

// moveConsumerLeader has the consumer's leader step down in favour of node
// and waits until node leads it.
func (c *natsCluster) moveConsumerLeader(stream, consumer, node string) {
	c.t.Helper()
	var last string
	err := poll.Retry(c.ctx, func(int) error {
		info, err := c.consumerInfo(stream, consumer)
		if err != nil {
			return err
		}
		if info.Cluster != nil && info.Cluster.Leader == node {
			return nil
		}
		req, _ := json.Marshal(map[string]any{"placement": map[string]string{"preferred": node}})
		return c.withJetStream(func(ctx context.Context, nc *nats.Conn, _ jetstream.JetStream) error {
			msg, err := nc.RequestWithContext(ctx, "$JS.API.CONSUMER.LEADER.STEPDOWN."+stream+"."+consumer, req)
			if err != nil {
				return err
			}
			last = string(msg.Data)
			return fmt.Errorf("consumer %s led by %s; asked to step down: %s", consumer, info.Cluster.Leader, msg.Data)
		})
	})
	if err != nil {
		c.t.Fatalf("consumer %s not moved to %s: %v (last answer: %s)", consumer, node, err, last)
	}
}
