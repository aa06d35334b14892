package vlmfleet_test

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/vlmfleet/vlmfleet/"

// layer is a floor of the repository: the packages under its paths, and
// the floors below it that they may import. A package imports freely
// within its own floor (the agent's packages import each other).
type layer struct {
	name  string
	paths []string
	below []string
	why   string
}

// layers is the house, bottom first. Each floor names what it may stand
// on, so an import that points up or sideways (the agent reaching into
// the controller, a leaf reaching into the agent) is refused. Only the
// packages' own imports count, not their tests': a test is a program
// that may stand above the package it tests (the agent's tests start the
// simulated engine of harness/simtest).
var layers = []layer{
	{name: "protocol", paths: []string{"protocol"},
		why: "the contract between agent and controller: everything reads it, it reads nothing of ours"},
	{name: "internal", paths: []string{"internal"}, below: []string{"protocol"},
		why: "leaves: utilities and tests' helpers that know neither the agent nor the controller"},
	{name: "wire", paths: []string{"controller/api", "controller/explorerapi"}, below: []string{"protocol"},
		why: "the HTTP API as clients see it, so that a client links no server"},
	{name: "profiles", paths: []string{"explorer/profiles"}, below: []string{"protocol"},
		why: "the published latency and throughput tables, data over protocol: the simulator calibrates from them, the client sends their filter"},
	{name: "page", paths: []string{"explorer/web"}, below: []string{"protocol"},
		why: "the explorer's pages and their static files: what they show, not how it is computed"},
	{name: "explorer", paths: []string{"explorer"}, below: []string{"protocol", "internal", "wire", "profiles", "page"},
		why: "reads runs into rows; knows neither the agent nor the controller that serves it"},
	{name: "agent", paths: []string{"agent"}, below: []string{"protocol", "internal", "profiles"},
		why: "talks to the controller only through NATS and protocol"},
	{name: "sweepfile", paths: []string{"controller/sweepfile"}, below: []string{"protocol", "wire"},
		why: "a sweep as a user writes it, decoded from JSON or YAML and checked: the CLI and the controller read it, the client does not link it"},
	{name: "storage", paths: []string{"controller/store", "controller/received"}, below: []string{"protocol", "internal"},
		why: "the bbolt store and the decoding of what it keeps: no room of the controller, no HTTP API"},
	{name: "ingest", paths: []string{"controller/ingest"}, below: []string{"protocol", "internal", "storage"},
		why: "the one ingest path of the events stream: the controller hands it the store and hooks"},
	{name: "live", paths: []string{"controller/live"}, below: []string{"protocol", "internal", "wire", "storage", "ingest"},
		why: "a room of the controller, live data: progress, telemetry, the agents' presence, events and SSE; knows no other room"},
	{name: "access", paths: []string{"controller/access"}, below: []string{"protocol", "internal", "wire"},
		why: "a room of the controller, HTTP access and TLS: the guard of every request, the API token, the listeners' certificates; knows no other room"},
	{name: "streams", paths: []string{"controller/streams"}, below: []string{"protocol", "internal", "ingest"},
		why: "a room of the controller, the JetStream streams: what each is, made with their copies and byte limits, and watched; knows no other room"},
	{name: "jobs", paths: []string{"controller/jobs"}, below: []string{"protocol", "internal", "wire", "sweepfile", "storage", "ingest"},
		why: "a room of the controller, jobs: a sweep fitted to the fleet, its jobs published, cancelled and ended when nothing will deliver them; knows the fleet as the controller hands it and no other room"},
	{name: "identity", paths: []string{"controller/identity"}, below: []string{"protocol", "internal", "wire", "storage", "access"},
		why: "a room of the controller, NATS identities: its own key, the users the embedded server admits, enrolment, joins, revocation and join tokens; takes the controller's TLS from access, reloads the server through hooks and knows no other room"},
	{name: "controller", paths: []string{"controller"}, below: []string{"protocol", "internal", "wire", "sweepfile", "storage", "ingest", "live", "access", "jobs", "streams", "identity"},
		why: "talks to agents only through NATS and protocol; wires its rooms together; is handed the explorer, never imports it"},
	{name: "client", paths: []string{"controller/client"}, below: []string{"protocol", "internal", "wire", "profiles"},
		why: "a program that talks to a controller links the API's types, not the server"},
	{name: "harness", paths: []string{"harness"},
		below: []string{"protocol", "internal", "wire", "profiles", "page", "explorer", "agent", "sweepfile", "controller", "client"},
		why:   "puts the agent and the controller together: a lab in one process, the swarm, the tests' helpers"},
	{name: "cmd", paths: []string{"cmd"},
		below: []string{"protocol", "internal", "wire", "profiles", "page", "explorer", "agent", "sweepfile", "controller", "client", "harness"},
		why:   "the commands, on top of everything"},
	{name: "e2e", paths: []string{"e2e", "deploy"}, below: []string{"protocol", "internal", "harness"},
		why: "suites of real processes and the deployment's checks, outside the house"},
}

// linkRule is what a package must not link at all, through any path:
// packages of this module by their path, other modules by theirs.
type linkRule struct {
	pkg        string
	notOurs    []string
	notModules []string
}

// links: the client's users carry neither the server, nor the explorer and
// its page, nor the YAML decoder of sweep files.
var links = []linkRule{
	{pkg: "controller/client",
		notOurs:    []string{"controller", "controller/store", "controller/sweepfile", "explorer", "explorer/web"},
		notModules: []string{"github.com/nats-io/nats-server", "go.etcd.io/bbolt", "github.com/prometheus", "github.com/goccy/go-yaml"}},
}

type listedPackage struct {
	ImportPath string
	Imports    []string
	Deps       []string
}

// under says whether pkg is path or a package below it.
func under(pkg, path string) bool { return pkg == path || strings.HasPrefix(pkg, path+"/") }

// layerOf is the floor of a package of this module: the one whose path
// matches most of it (controller/client before controller).
func layerOf(pkg string) (layer, bool) {
	var best layer
	longest := -1
	for _, l := range layers {
		for _, p := range l.paths {
			if under(pkg, p) && len(p) > longest {
				best, longest = l, len(p)
			}
		}
	}
	return best, longest >= 0
}

func listPackages(t *testing.T) []listedPackage {
	t.Helper()
	out, err := exec.Command("go", "list", "-json", "./...").Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("go list -json ./...: %v\n%s", err, ee.Stderr)
		}
		t.Fatalf("go list -json ./...: %v", err)
	}
	var pkgs []listedPackage
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p listedPackage
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("reading go list's output: %v", err)
		}
		pkgs = append(pkgs, p)
	}
	if len(pkgs) == 0 {
		t.Fatal("go list listed no packages")
	}
	return pkgs
}

// layeringViolations lists each import of pkgs that does not stand on a
// floor below its importer's, and each package no floor holds.
func layeringViolations(pkgs []listedPackage) []string {
	var bad []string
	for _, p := range pkgs {
		from := strings.TrimPrefix(p.ImportPath, module)
		if from == p.ImportPath || from == "" {
			continue // the module's root holds only this test
		}
		lf, ok := layerOf(from)
		if !ok {
			bad = append(bad, from+": in no floor of the layering table; add it where it stands")
			continue
		}
		for _, imp := range p.Imports {
			to, ours := strings.CutPrefix(imp, module)
			if !ours {
				continue
			}
			lt, ok := layerOf(to)
			if !ok || (lt.name != lf.name && !slices.Contains(lf.below, lt.name)) {
				bad = append(bad, fmt.Sprintf("%s imports %s (%s): the %s floor stands on %s (%s)",
					from, to, cmp.Or(lt.name, "in no floor"), lf.name, cmp.Or(strings.Join(lf.below, ", "), "nothing of ours"), lf.why))
			}
		}
	}
	return bad
}

// No package imports one that stands above it or beside it.
func TestLayering(t *testing.T) {
	for _, v := range layeringViolations(listPackages(t)) {
		t.Error(v)
	}
}

// The table refuses what it must: each rule the repository is held to,
// tried with an import that breaks it.
func TestLayeringRefusesImportsUpward(t *testing.T) {
	for _, c := range []struct{ from, to string }{
		{"protocol", "internal/backoff"},
		{"internal/tick", "agent/loadgen"},
		{"internal/testutil", "controller"},
		{"internal/backoff", "explorer"},
		{"agent/measure", "controller/api"},
		{"agent", "explorer"},
		{"controller/api", "explorer"},
		{"controller/client", "explorer/web"},
		{"controller/client", "controller/sweepfile"},
		{"controller/api", "controller/sweepfile"},
		{"controller/sweepfile", "controller"},
		{"controller", "harness/simlab"},
		{"controller/live", "controller"},
		{"controller/store", "controller/live"},
		{"controller/ingest", "controller/live"},
		{"controller/live", "controller/access"},
		{"controller/access", "controller/live"},
		{"controller/access", "controller/store"},
		{"controller/jobs", "controller"},
		{"controller/jobs", "controller/live"},
		{"controller/jobs", "controller/access"},
		{"controller/live", "controller/jobs"},
		{"controller/store", "controller/jobs"},
		{"controller/streams", "controller"},
		{"controller/streams", "controller/jobs"},
		{"controller/streams", "controller/store"},
		{"controller/jobs", "controller/streams"},
		{"controller/identity", "controller"},
		{"controller/identity", "controller/jobs"},
		{"controller/identity", "controller/live"},
		{"controller/identity", "controller/streams"},
		{"controller/jobs", "controller/identity"},
		{"controller/access", "controller/identity"},
		{"controller/store", "controller/identity"},
	} {
		pkgs := []listedPackage{{ImportPath: module + c.from, Imports: []string{module + c.to}}}
		if v := layeringViolations(pkgs); len(v) != 1 {
			t.Errorf("%s importing %s: violations %q, want one", c.from, c.to, v)
		}
	}
	ok := []listedPackage{
		{ImportPath: module + "harness/simlab", Imports: []string{module + "agent", module + "controller", module + "explorer"}},
		{ImportPath: module + "agent/measure", Imports: []string{module + "agent/loadgen", module + "protocol"}},
		{ImportPath: module + "controller/client", Imports: []string{module + "controller/explorerapi", module + "internal/tlsca"}},
		{ImportPath: module + "controller", Imports: []string{module + "controller/live", module + "controller/ingest", module + "controller/store"}},
		{ImportPath: module + "controller/live", Imports: []string{module + "controller/store", module + "controller/api"}},
		{ImportPath: module + "controller/jobs", Imports: []string{module + "controller/store", module + "controller/ingest", module + "controller/sweepfile"}},
		{ImportPath: module + "controller", Imports: []string{module + "controller/jobs"}},
		{ImportPath: module + "controller/streams", Imports: []string{module + "controller/ingest", module + "protocol"}},
		{ImportPath: module + "controller", Imports: []string{module + "controller/streams"}},
		{ImportPath: module + "controller/identity", Imports: []string{module + "controller/store", module + "controller/access", module + "controller/api", module + "internal/atomicfile"}},
		{ImportPath: module + "controller", Imports: []string{module + "controller/identity"}},
		{ImportPath: module + "controller", Imports: []string{module + "controller/sweepfile", module + "controller/api"}},
		{ImportPath: module + "cmd/vlmfleet", Imports: []string{module + "controller/sweepfile"}},
	}
	if v := layeringViolations(ok); len(v) != 0 {
		t.Errorf("imports that stand on lower floors refused: %q", v)
	}
}

// The client links neither the server, the explorer's page nor the YAML
// decoder, through any path.
func TestLinks(t *testing.T) {
	pkgs := listPackages(t)
	for _, rule := range links {
		i := slices.IndexFunc(pkgs, func(p listedPackage) bool { return p.ImportPath == module+rule.pkg })
		if i < 0 {
			t.Errorf("%s: not listed", rule.pkg)
			continue
		}
		for _, v := range linkViolations(pkgs[i].Deps, rule) {
			t.Errorf("%s links %s", rule.pkg, v)
		}
	}
}

// linkViolations are the deps rule refuses.
func linkViolations(deps []string, rule linkRule) []string {
	var bad []string
	for _, dep := range deps {
		ours, isOurs := strings.CutPrefix(dep, module)
		switch {
		case isOurs && slices.Contains(rule.notOurs, ours):
			bad = append(bad, dep)
		case !isOurs && slices.ContainsFunc(rule.notModules, func(m string) bool { return under(dep, m) }):
			bad = append(bad, dep)
		}
	}
	return bad
}

func TestLinkRulesRefuse(t *testing.T) {
	rule := links[0]
	deps := []string{module + "explorer/profiles", module + "controller/explorerapi", "github.com/nats-io/nats.go",
		module + "explorer/web", "go.etcd.io/bbolt/internal/common", "github.com/prometheus/client_golang/prometheus",
		module + "controller/sweepfile", "github.com/goccy/go-yaml/parser"}
	got := linkViolations(deps, rule)
	want := deps[3:]
	if !slices.Equal(got, want) {
		t.Errorf("refused %q, want %q", got, want)
	}
}
