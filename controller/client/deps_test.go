package client

import (
	"os/exec"
	"strings"
	"testing"
)

// The client links only the API's types (controller/api and
// controller/explorerapi), never the server: a program that talks to a
// controller does not carry NATS's server, the store's database, the
// metrics library, the explorer that computes its answers and the page's
// static files it serves, nor the YAML decoder of sweep files (the
// controller reads a sweep file's YAML as sent).
func TestClientDoesNotLinkTheServer(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	forbidden := []string{
		"github.com/nats-io/nats-server",
		"go.etcd.io/bbolt",
		"github.com/prometheus",
		"github.com/vlmfleet/vlmfleet/controller/store",
		"github.com/vlmfleet/vlmfleet/explorer/web",
		"github.com/vlmfleet/vlmfleet/controller/sweepfile",
		"github.com/goccy/go-yaml",
	}
	for _, dep := range strings.Fields(string(out)) {
		switch dep {
		case "github.com/vlmfleet/vlmfleet/controller":
			t.Errorf("the client imports the controller package")
		case "github.com/vlmfleet/vlmfleet/explorer":
			t.Errorf("the client imports the explorer package")
		}
		for _, f := range forbidden {
			if strings.HasPrefix(dep, f) {
				t.Errorf("the client links %s", dep)
			}
		}
	}
}
