package controller

import (
	"context"
	"encoding/binary"
	"fmt"
	"io/fs"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/vlmfleet/vlmfleet/controller/api"
	"github.com/vlmfleet/vlmfleet/controller/store"
	"github.com/vlmfleet/vlmfleet/internal/tlsca"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// usedDataDir is the data directory of a controller that ran with an
// agent enrolled and announced and a sweep for it, and has its own CA as
// a start with TLS makes it; the controller is closed.
func usedDataDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	c := startControllerWith(t, Options{DataDir: dir})
	_, a := announced(t, c, "a1", "d1")
	submit(t, c, protocol.Sweep{Workload: testWorkload()})
	// Imported runs make the store larger than the 64 KiB it is cut to.
	var entries []store.ImportEntry
	for i := range 40 {
		r := testRun(fmt.Sprintf("imported-%d", i), "a1")
		r.Status, r.FinishedAt = protocol.RunCompleted, r.CreatedAt.Add(time.Minute)
		for _, cams := range []int{1, 2, 3, 4} {
			r.Combinations = append(r.Combinations, *testCombo("720p", cams))
		}
		entries = append(entries, store.ImportEntry{Origin: "test", Run: r})
	}
	if _, err := c.store.ImportRuns(entries); err != nil {
		t.Fatal(err)
	}
	a.nc.Close()
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := tlsca.Open(filepath.Join(dir, TLSDirName), []string{"127.0.0.1"}, time.Now()); err != nil {
		t.Fatal(err)
	}
	return dir
}

// copyDir copies the files and directories of src into a new directory,
// modes and all.
func copyDir(t *testing.T, src string) string {
	t.Helper()
	dst := t.TempDir()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		to := filepath.Join(dst, rel)
		fi, err := d.Info()
		if err != nil {
			return err
		}
		if d.IsDir() {
			if err := os.MkdirAll(to, 0o700); err != nil {
				return err
			}
			return os.Chmod(to, fi.Mode().Perm())
		}
		if !d.Type().IsRegular() {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(to, b, fi.Mode().Perm())
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

// startChild starts a controller on dir in a child process, since a panic
// in a goroutine of bbolt's would end the whole test binary; it returns
// what the child said.
func startChild(t *testing.T, dir string) string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestControllerInChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), "VLMFLEET_TEST_DATA_DIR="+dir)
	out, _ := cmd.CombinedOutput()
	return string(out)
}

// TestControllerInChild is startChild's child; run on its own, it skips.
func TestControllerInChild(t *testing.T) {
	dir := os.Getenv("VLMFLEET_TEST_DATA_DIR")
	if dir == "" {
		t.Skip("the child of startChild")
	}
	c, err := New(Options{DataDir: dir, NATSListen: "127.0.0.1:-1", HTTPAddr: "127.0.0.1:0", TLS: TLSOn, Log: zerolog.Nop()})
	if err != nil {
		fmt.Printf("NEW ERROR: %v\n", err)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err = c.Start(ctx)
	var agents []api.AgentView
	if err == nil {
		agents, err = c.Agents(ctx)
	}
	fmt.Printf("STARTED: %d agents, %v\n", len(agents), err)
	_ = c.Close()
}

// A controller whose store a crash emptied, cut short or damaged refuses
// to start, saying which file, what it found and how to restore a backup,
// and does not panic; the same data directory undamaged starts with its
// agent, and a new data directory starts empty.
func TestControllerRefusesADamagedStore(t *testing.T) {
	used := usedDataDir(t)
	for _, tc := range []struct {
		name   string
		damage func(t *testing.T, db string)
		says   string
	}{
		{"empty", func(t *testing.T, db string) { truncateFile(t, db, 0) },
			"is empty (0 bytes), although the data directory was in use (nats/ holds JetStream data, nats-controller.nk exists, api-token exists, tls/ca-key.pem exists)"},
		{"cut to 64 KiB", func(t *testing.T, db string) { truncateFile(t, db, 64<<10) }, "is cut short"},
		{"a page overwritten", overwritePage, "is damaged"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := copyDir(t, used)
			db := filepath.Join(dir, StoreFileName)
			tc.damage(t, db)
			out := startChild(t, dir)
			if strings.Contains(out, "panic") || !strings.Contains(out, "NEW ERROR: controller: store: "+db+" "+tc.says) {
				t.Fatalf("the controller on a damaged store, want an error saying %q:\n%s", tc.says, out)
			}
			for _, want := range []string{"Restore the newest backup (vlmfleet controller backup)", "install -m 600 BACKUP " + db, `docs/operations.md, "A damaged store"`} {
				if !strings.Contains(out, want) {
					t.Errorf("the error does not say %q:\n%s", want, out)
				}
			}
		})
	}
	if out := startChild(t, copyDir(t, used)); !strings.Contains(out, "STARTED: 1 agents, <nil>") {
		t.Errorf("the undamaged copy:\n%s", out)
	}
	if out := startChild(t, filepath.Join(t.TempDir(), "new")); !strings.Contains(out, "STARTED: 0 agents, <nil>") {
		t.Errorf("a new data directory:\n%s", out)
	}
}

func truncateFile(t *testing.T, path string, size int64) {
	t.Helper()
	if err := os.Truncate(path, size); err != nil {
		t.Fatal(err)
	}
}

// overwritePage writes random bytes over one of the file's branch or leaf
// pages.
func overwritePage(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var pages []int
	for id := 2; id < len(b)/4096; id++ {
		if flags := binary.LittleEndian.Uint16(b[id*4096+8:]); flags == 0x01 || flags == 0x02 {
			pages = append(pages, id)
		}
	}
	rng := rand.New(rand.NewSource(6))
	id := pages[rng.Intn(len(pages))]
	rng.Read(b[id*4096 : (id+1)*4096])
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// The data directory and tls/ are made 0700, or made private, when others
// may use them, with a warning; a store file or private key that others may
// read stops the controller with the chmod that fixes it, as a loose API
// token file does.
func TestLooseModesOfTheDataDirectory(t *testing.T) {
	used := usedDataDir(t)
	for _, tc := range []struct {
		path string
		mode os.FileMode
	}{
		{StoreFileName, 0o644},
		{filepath.Join(TLSDirName, "ca-key.pem"), 0o644},
		{filepath.Join(TLSDirName, "server-key.pem"), 0o640},
	} {
		dir := copyDir(t, used)
		p := filepath.Join(dir, tc.path)
		if err := os.Chmod(p, tc.mode); err != nil {
			t.Fatal(err)
		}
		c, err := New(Options{DataDir: dir, HTTPAddr: "127.0.0.1:0", TLS: TLSOn, Log: zerolog.Nop()})
		if err == nil {
			_ = c.Close()
			t.Errorf("%s at %04o: the controller started", p, tc.mode)
			continue
		}
		if want := fmt.Sprintf("%s may be read by others (mode %04o): run chmod 600 %s", p, tc.mode, p); !strings.Contains(err.Error(), want) {
			t.Errorf("%s at %04o: %v; want it to say %q", p, tc.mode, err, want)
		}
	}
	dir := copyDir(t, used)
	for p, mode := range map[string]os.FileMode{dir: 0o755, filepath.Join(dir, TLSDirName): 0o777} {
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
	}
	var logs strings.Builder
	c, err := New(Options{DataDir: dir, HTTPAddr: "127.0.0.1:0", TLS: TLSOn, Log: zerolog.New(&logs)})
	if err != nil {
		t.Fatal(err)
	}
	_ = c.Close()
	for _, p := range []string{dir, filepath.Join(dir, TLSDirName)} {
		if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != 0o700 {
			t.Errorf("%s: %v, %v; want it made 0700", p, fi.Mode(), err)
		}
		if !strings.Contains(logs.String(), `"dir":"`+p+`"`) {
			t.Errorf("nothing logged of %s: %s", p, logs.String())
		}
	}
	// A directory open to others that holds something else (--data-dir
	// given a shared directory by mistake) is refused, not closed to them.
	shared := t.TempDir()
	if err := os.WriteFile(filepath.Join(shared, "notes.txt"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if c, err := New(Options{DataDir: shared, Log: zerolog.Nop()}); err == nil {
		_ = c.Close()
		t.Errorf("a shared directory open to others became a data directory")
	} else if want := shared + " is open to others (mode 0755) and holds what is not the controller's"; !strings.Contains(err.Error(), want) {
		t.Errorf("a shared directory: %v; want %q", err, want)
	}
	// The installer's data directory is the service group's to read.
	if err := os.Chmod(dir, 0o750); err != nil {
		t.Fatal(err)
	}
	if c, err := New(Options{DataDir: dir, HTTPAddr: "127.0.0.1:0", TLS: TLSOn, Log: zerolog.Nop()}); err != nil {
		t.Errorf("a data directory at 0750: %v", err)
	} else {
		_ = c.Close()
	}
	if fi, _ := os.Stat(dir); fi.Mode().Perm() != 0o750 {
		t.Errorf("a data directory at 0750 was made %04o", fi.Mode().Perm())
	}
}
