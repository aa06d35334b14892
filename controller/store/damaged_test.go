package store

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vlmfleet/vlmfleet/protocol"
)

// storeWithData makes a store through its own write paths (an agent, its
// enrolment, jobs and results with request records), closes it cleanly and
// returns its file.
func storeWithData(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "vlmfleet.db")
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.PutAgentHello(protocol.AgentHello{Schema: 1, Level: protocol.AgentLevel, AgentID: "a1", Hostname: "h1", StartedAt: time.Now()}, time.Now()); err != nil {
		t.Fatal(err)
	}
	if _, err := s.PutIdentity("a1", "UAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", time.Now()); err != nil {
		t.Fatal(err)
	}
	for i := range 30 {
		run := labRun(t, s, fmt.Sprintf("j%d", i), "a1")
		if _, err := s.ApplyResults(prepared(t, protocol.ResultMessage{Schema: 1, AgentID: "a1", Run: run, Combination: seriesCombo("480p", 200)}), time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// treePages are the ids of the file's branch and leaf pages.
func treePages(t *testing.T, data []byte) []int {
	t.Helper()
	const pageSize = 4096
	var ids []int
	for id := 2; id < len(data)/pageSize; id++ {
		// A page header: id (8 bytes), flags (2): 0x01 branch, 0x02 leaf.
		if flags := binary.LittleEndian.Uint16(data[id*pageSize+8:]); flags == 0x01 || flags == 0x02 {
			ids = append(ids, id)
		}
	}
	if len(ids) < 10 {
		t.Fatalf("the store has %d branch and leaf pages; want a store with data", len(ids))
	}
	return ids
}

// openChild opens path with Open in a child process, since bbolt panics on
// a damaged page in a goroutine of its own, where no recover reaches, and
// the panic would end the whole test binary; it returns what the child
// said and whether it exited cleanly.
func openChild(t *testing.T, path, prior string) (string, bool) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestOpenInChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), "VLMFLEET_TEST_OPEN="+path, "VLMFLEET_TEST_PRIOR="+prior)
	out, err := cmd.CombinedOutput()
	return string(out), err == nil
}

// TestOpenInChild is openChild's child: it opens the store it is given
// and says how that went; run on its own, it skips.
func TestOpenInChild(t *testing.T) {
	path := os.Getenv("VLMFLEET_TEST_OPEN")
	if path == "" {
		t.Skip("the child of openChild")
	}
	s, err := Open(path, Options{PriorState: os.Getenv("VLMFLEET_TEST_PRIOR")})
	if err != nil {
		fmt.Printf("OPEN ERROR: %v\n", err)
		return
	}
	n, _ := s.Agents(context.Background())
	fmt.Printf("OPENED: %d agents\n", len(n))
	_ = s.Close()
}

// A store damaged as a kill -9 or a failing disk leaves it is refused with
// an error that names the file, what is wrong with it and how to restore a
// backup, never with a panic: emptied (while the data directory shows it
// had data, or its pid file shows a controller had it open), cut to 64
// KiB, or one of its pages overwritten with random bytes. An empty file
// with nothing to show it ever held data is a store whose making was cut
// short, and a new one is made in it.
func TestDamagedStoreIsRefusedWithoutPanic(t *testing.T) {
	good := storeWithData(t)
	orig, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	pages := treePages(t, orig)
	rng := rand.New(rand.NewSource(20))
	for _, tc := range []struct {
		name, prior string
		pid         bool
		damage      func([]byte) []byte
		says        string
	}{
		{name: "empty, JetStream data beside it", prior: "nats/ holds JetStream data", damage: func([]byte) []byte { return nil }, says: "is empty (0 bytes), although the data directory was in use (nats/ holds JetStream data)"},
		{name: "empty, its pid file left", pid: true, damage: func([]byte) []byte { return nil }, says: "is empty (0 bytes)"},
		{name: "cut to 64 KiB", damage: func(b []byte) []byte { return b[:64<<10] }, says: "is cut short"},
		{name: "cut to 64 KiB, unclean stop", pid: true, damage: func(b []byte) []byte { return b[:64<<10] }, says: "is cut short"},
		{name: "a page overwritten", damage: func(b []byte) []byte {
			id := pages[rng.Intn(len(pages))]
			rng.Read(b[id*4096 : (id+1)*4096])
			return b
		}, says: "is damaged"},
		{name: "both meta pages overwritten", damage: func(b []byte) []byte { rng.Read(b[:8192]); return b }, says: "is damaged"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "vlmfleet.db")
			if err := os.WriteFile(path, tc.damage(append([]byte(nil), orig...)), 0o600); err != nil {
				t.Fatal(err)
			}
			if tc.pid {
				if err := os.WriteFile(path+".pid", []byte("4242\n"), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			out, exited := openChild(t, path, tc.prior)
			if !exited || strings.Contains(out, "panic") || !strings.Contains(out, "OPEN ERROR: ") {
				t.Fatalf("Open of the damaged copy did not end in an error (clean exit %v):\n%s", exited, out)
			}
			for _, want := range []string{"store: " + path + " " + tc.says, "Restore the newest backup", "install -m 600 BACKUP " + path, "docs/operations.md"} {
				if !strings.Contains(out, want) {
					t.Errorf("the error does not say %q:\n%s", want, out)
				}
			}
		})
	}
	t.Run("empty, nothing else", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "vlmfleet.db")
		if err := os.WriteFile(path, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		if out, _ := openChild(t, path, ""); !strings.Contains(out, "OPENED: 0 agents") {
			t.Errorf("an empty file with nothing beside it is not made a new store:\n%s", out)
		}
	})
	// The copies were damaged, not the store: it opens, after an unclean
	// stop too (bbolt's consistency check finds nothing).
	if err := os.WriteFile(good+".pid", []byte("4242\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, _ := openChild(t, good, "nats/ holds JetStream data"); !strings.Contains(out, "OPENED: 1 agents") {
		t.Errorf("the undamaged store after an unclean stop:\n%s", out)
	}
}

// The store's file is made 0600 in a directory made 0700; a file others
// may read is refused with the chmod that fixes it.
func TestStoreFileIsPrivate(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	path := filepath.Join(dir, "vlmfleet.db")
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	_ = s.Close()
	for p, want := range map[string]os.FileMode{dir: 0o700, path: 0o600} {
		if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != want {
			t.Errorf("%s: %v, %v; want mode %04o", p, fi.Mode(), err, want)
		}
	}
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	s, err = Open(path, Options{})
	if err == nil {
		_ = s.Close()
		t.Fatal("a store file others may read was opened")
	}
	if want := path + " may be read by others (mode 0644): run chmod 600 " + path; !strings.Contains(err.Error(), want) {
		t.Errorf("error %q, want it to say %q", err, want)
	}
}

// The pid file replaces a symbolic link in its place rather than writing
// through it: whoever may write to the data directory cannot make the
// controller overwrite another file.
func TestPidFileDoesNotFollowALink(t *testing.T) {
	dir := t.TempDir()
	victim := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(victim, []byte("precious\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "vlmfleet.db")
	if err := os.Symlink(victim, path+".pid"); err != nil {
		t.Fatal(err)
	}
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if b, _ := os.ReadFile(victim); string(b) != "precious\n" {
		t.Errorf("the file the pid file's link named now holds %q", b)
	}
	fi, err := os.Lstat(path + ".pid")
	if err != nil || !fi.Mode().IsRegular() {
		t.Fatalf("the pid file: %v, %v; want a regular file", fi, err)
	}
	if b, _ := os.ReadFile(path + ".pid"); strings.TrimSpace(string(b)) != fmt.Sprint(os.Getpid()) {
		t.Errorf("the pid file holds %q, want %d", b, os.Getpid())
	}
}
