package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vlmfleet/vlmfleet/controller"
	"github.com/vlmfleet/vlmfleet/controller/store"
	"github.com/vlmfleet/vlmfleet/harness/labtest"
)

// controller backup writes a copy of the running controller's store that
// opens as a store and holds what the controller had; it needs --out, and
// the API token.
func TestControllerBackupCommand(t *testing.T) {
	l := labtest.Start(t, controller.Options{})
	url := l.Ctl.HTTPURL()
	out := filepath.Join(t.TempDir(), "copy.db")

	if code, _, errs := runArgs("controller", "backup", "--controller", url, "--token-file", l.TokenFile); code != 2 || !strings.Contains(errs, "--out FILE is required") {
		t.Errorf("without --out: exit %d: %s", code, errs)
	}
	if code, _, errs := runArgs("controller", "backup", "--controller", url, "--out", out); code != 1 || !strings.Contains(errs, "401") && !strings.Contains(errs, "token") {
		t.Errorf("without the token: exit %d: %s", code, errs)
	}
	code, stdout, errs := runArgs("controller", "backup", "--controller", url, "--token-file", l.TokenFile, "--out", out)
	if code != 0 || !strings.Contains(stdout, "wrote a copy of the store") {
		t.Fatalf("backup: exit %d\n%s%s", code, stdout, errs)
	}
	st, err := store.Open(out, store.Options{})
	if err != nil {
		t.Fatalf("the copy does not open as a store: %v", err)
	}
	defer st.Close()
	agents, err := st.Agents(context.Background())
	if err != nil || len(agents) != 1 || agents[0].Hello.AgentID != labtest.Agent {
		t.Errorf("agents in the copy: %+v, %v; want %s", agents, err, labtest.Agent)
	}
}

// A stream limit under four of the largest messages stops the controller
// before it starts anything, with the flag named.
func TestControllerStreamLimitFlags(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		says string
	}{
		{[]string{"--events-stream-mib", "8"}, "--events-stream-mib 8: allowed 32.."},
		{[]string{"--jobs-stream-mib", "0"}, "--jobs-stream-mib 0: allowed 32.."},
	} {
		args := append([]string{"controller", "--data-dir", dir, "--http", "127.0.0.1:0"}, tc.args...)
		if code, _, errs := runArgs(args...); code != 2 || !strings.Contains(errs, tc.says) {
			t.Errorf("%v: exit %d: %s; want exit 2 saying %q", tc.args, code, errs, tc.says)
		}
	}
}

// --stream-replicas outside 1..5, or above 1 without a cluster, stops the
// controller before it starts anything, with the flag named.
func TestControllerStreamReplicasFlag(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		code int
		says string
	}{
		{[]string{"--stream-replicas", "0"}, 2, "--stream-replicas 0: allowed 1..5"},
		{[]string{"--stream-replicas", "6", "--nats-url", "nats://127.0.0.1:1"}, 1, "--stream-replicas 6: allowed 1..5"},
		{[]string{"--stream-replicas", "3"}, 1, "--stream-replicas 3 needs a NATS cluster"},
	} {
		args := append([]string{"controller", "--data-dir", dir, "--http", "127.0.0.1:0"}, tc.args...)
		if code, _, errs := runArgs(args...); code != tc.code || !strings.Contains(errs, tc.says) {
			t.Errorf("%v: exit %d: %s; want exit %d saying %q", tc.args, code, errs, tc.code, tc.says)
		}
	}
}
