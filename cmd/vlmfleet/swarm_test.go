package main

import (
	"strings"
	"testing"
)

// `sim swarm` refuses what it cannot run with exit 2 and a line naming the
// flag, before it asks the controller for anything.
func TestSimSwarmRefusesBadFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"sim", "swarm"}, "--count 0: want the number of agents, 1 or more"},
		{[]string{"sim", "swarm", "--count", "3", "--speedup", "0.5"}, "--speedup 0.5: want 1 or more"},
		{[]string{"sim", "swarm", "--count", "3", "--insecure"}, "--insecure needs --nats-url"},
		{[]string{"sim", "swarm", "--count", "3", "--device", "Toaster"}, `"Toaster"`},
		{[]string{"sim", "swarm", "--count", "3", "extra"}, `unexpected argument "extra"`},
	} {
		code, _, stderr := cliRun(t, nil, c.args...)
		if code != 2 || !strings.Contains(stderr, c.want) {
			t.Errorf("vlmfleet %s: exit %d, stderr %q; want 2 and %q", strings.Join(c.args, " "), code, stderr, c.want)
		}
	}
}
