package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vlmfleet/vlmfleet/controller"
	"github.com/vlmfleet/vlmfleet/controller/store"
	"github.com/vlmfleet/vlmfleet/internal/testutil/labtest"
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
