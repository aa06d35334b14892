package deploy

import (
	"archive/tar"
	"bufio"
	"compress/gzip"
	"crypto/sha256"
	"debug/buildinfo"
	"debug/elf"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Two releases of one commit into different directories are the same bytes,
// and the binary says what was stamped into it. Only amd64 is built, twice
// (arm64 is the same script with another GOARCH, and would double the time);
// the second build finds the first's packages in the Go build cache, which
// is keyed by everything that reaches the output (with -trimpath, not the
// directory), so a path or a time leaking in would still differ.
func TestReleaseIsReproducibleAndStamped(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the release builds the binary twice")
	}
	git, err := exec.LookPath("git")
	if err != nil {
		t.Skip("git is not installed; a release is built from a commit")
	}
	head, err := exec.Command(git, "rev-parse", "HEAD").Output()
	if err != nil {
		t.Skip("not a git checkout; a release is built from a commit")
	}
	commit := strings.TrimSpace(string(head))
	ct, err := exec.Command(git, "log", "-1", "--format=%ct", "HEAD").Output()
	if err != nil {
		t.Fatal(err)
	}
	epoch, err := strconv.ParseInt(strings.TrimSpace(string(ct)), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	date := time.Unix(epoch, 0).UTC()

	const version = "v0.0.0-test"
	name := "vlmfleet-" + version + "-linux-amd64"
	var sums [2]string
	var dirs [2]string
	for i := range dirs {
		dirs[i] = filepath.Join(t.TempDir(), "dist"+strconv.Itoa(i))
		cmd := exec.Command("bash", "../scripts/release", version, "--arch", "amd64", "--out", dirs[i])
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("scripts/release: %v\n%s", err, out)
		}
		b, err := os.ReadFile(filepath.Join(dirs[i], "SHA256SUMS"))
		if err != nil {
			t.Fatal(err)
		}
		sums[i] = string(b)
		verifySums(t, dirs[i], []string{name, name + ".tar.gz"})
	}
	if sums[0] != sums[1] {
		t.Errorf("two releases of %s differ:\n%s\n%s", commit, sums[0], sums[1])
	}

	bin := filepath.Join(dirs[0], name)
	out, err := exec.Command(bin, "version").CombinedOutput()
	if err != nil {
		t.Fatalf("%s version: %v\n%s", name, err, out)
	}
	want := "vlmfleet " + version + "\ncommit " + commit + "\nbuilt  " + date.Format(time.RFC3339) + "\n"
	if string(out) != want {
		t.Errorf("vlmfleet version printed\n%s\nwant\n%s", out, want)
	}

	// Static: no program interpreter (the dynamic loader) to find.
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if f.Machine != elf.EM_X86_64 {
		t.Errorf("machine %v, want x86-64", f.Machine)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Errorf("%s is dynamically linked (has PT_INTERP)", name)
		}
	}
	bi, err := buildinfo.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	settings := map[string]string{}
	for _, s := range bi.Settings {
		settings[s.Key] = s.Value
	}
	for k, v := range map[string]string{"CGO_ENABLED": "0", "-trimpath": "true", "GOAMD64": "v1", "vcs.revision": "", "vcs.time": ""} {
		if settings[k] != v {
			t.Errorf("build setting %s=%q, want %q", k, settings[k], v)
		}
	}

	checkTarball(t, filepath.Join(dirs[0], name+".tar.gz"), name, bin, date)
}

// verifySums checks SHA256SUMS as `sha256sum -c` would, and that it lists
// exactly the files wanted.
func verifySums(t *testing.T, dir string, want []string) {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, "SHA256SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var listed []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		sum, file, ok := strings.Cut(sc.Text(), "  ")
		if !ok {
			t.Fatalf("SHA256SUMS line %q", sc.Text())
		}
		listed = append(listed, file)
		b, err := os.ReadFile(filepath.Join(dir, file))
		if err != nil {
			t.Fatal(err)
		}
		h := sha256.Sum256(b)
		if hex.EncodeToString(h[:]) != sum {
			t.Errorf("%s: sha256 %x, SHA256SUMS says %s", file, h, sum)
		}
	}
	if strings.Join(listed, " ") != strings.Join(want, " ") {
		t.Errorf("SHA256SUMS lists %v, want %v", listed, want)
	}
}

// checkTarball: the binary and what install.sh needs, owned by 0:0, dated
// the commit, so that the tarball too is the same bytes every time.
func checkTarball(t *testing.T, path, name, bin string, date time.Time) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	if !zr.ModTime.IsZero() || zr.Name != "" {
		t.Errorf("gzip header carries name %q, time %v", zr.Name, zr.ModTime)
	}
	tr := tar.NewReader(zr)
	modes := map[string]int64{}
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Uid != 0 || h.Gid != 0 || !h.ModTime.Equal(date) {
			t.Errorf("%s: owner %d:%d, mtime %v; want 0:0, %v", h.Name, h.Uid, h.Gid, h.ModTime, date)
		}
		modes[strings.TrimSuffix(h.Name, "/")] = h.Mode
		if h.Name == name+"/vlmfleet" {
			b, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			want, err := os.ReadFile(bin)
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != string(want) {
				t.Errorf("the tarball's vlmfleet is not %s", filepath.Base(bin))
			}
		}
	}
	for file, mode := range map[string]int64{
		"vlmfleet": 0o755, "deploy/install.sh": 0o755, "deploy/agent.example.yaml": 0o644,
		"deploy/controller.env": 0o644, "deploy/vlmfleet-agent.service": 0o644,
		"deploy/vlmfleet-controller.service": 0o644, "LICENSE": 0o644,
	} {
		if got, ok := modes[name+"/"+file]; !ok || got != mode {
			t.Errorf("tarball: %s mode %o (present %v), want %o", file, got, ok, mode)
		}
	}
	for file := range modes {
		if strings.HasSuffix(file, "_test.go") {
			t.Errorf("tarball carries the test %s", file)
		}
	}
}
