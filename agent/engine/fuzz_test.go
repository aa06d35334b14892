package engine

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Durations come from config files: no input may panic or go negative.
func FuzzDuration(f *testing.F) {
	for _, s := range []string{"10m", "90s", "600", "1h30m", "-5s", "1e400", "NaN", `"10m"`, "'5s'", "", " ", "9223372036s"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var d Duration
		if err := d.UnmarshalYAML([]byte(s)); err == nil && d < 0 {
			t.Fatalf("YAML %q gave %v", s, d)
		}
		d = 0
		if err := d.UnmarshalJSON([]byte(s)); err == nil && d < 0 {
			t.Fatalf("JSON %q gave %v", s, d)
		}
		if v, err := ParseDuration(s); err == nil {
			if v < 0 {
				t.Fatalf("%q gave %v", s, v)
			}
			// The written form reads back the same.
			var back Duration
			if err := back.UnmarshalText([]byte(v.String())); err != nil || back != v {
				t.Fatalf("%q: %v round-trips to %v, %v", s, v, back, err)
			}
		}
	})
}

// Whatever a config names, an accepted local model path lies inside the root.
func FuzzModelPath(f *testing.F) {
	root := f.TempDir()
	outside := f.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "hf", "Qwen3-VL"), 0o755); err != nil {
		f.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "m.gguf"), []byte("x"), 0o644); err != nil {
		f.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(root, "out")); err != nil {
		f.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(root, "hf"), filepath.Join(root, "in")); err != nil {
		f.Fatal(err)
	}
	for _, s := range []string{"m.gguf", "hf/Qwen3-VL", "in/Qwen3-VL", "out/x", "../x", "/etc/passwd", root + "/m.gguf",
		root + "/../x", root + "/out/x", "Qwen/Qwen3-VL-4B-Instruct", "./m.gguf", "a/../../x", "", ".", "..", "m.gguf\x00"} {
		f.Add(s)
	}
	realRoot, err := filepath.EvalSymlinks(root)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, p string) {
		got, err := resolveModelPath("model", p, []string{root}, true)
		if err != nil {
			return
		}
		if !filepath.IsAbs(got) {
			if !hubID.MatchString(got) {
				t.Fatalf("%q accepted as %q, neither absolute nor a hub id", p, got)
			}
			return
		}
		real, err := evalExisting(got)
		if err != nil {
			t.Fatalf("%q accepted as %q, which does not evaluate: %v", p, got, err)
		}
		if real != realRoot && !strings.HasPrefix(real, realRoot+string(filepath.Separator)) {
			t.Fatalf("%q accepted as %q, which is %q outside %q", p, got, real, realRoot)
		}
	})
}

// Log tails come from whatever an engine prints.
func FuzzLogTail(f *testing.F) {
	f.Add("a\nb\nc\n", 2)
	f.Add("", 3)
	f.Add("\n\n\n", 1)
	f.Add("no newline", 5)
	f.Fuzz(func(t *testing.T, s string, n int) {
		if n < 0 || n > 1000 {
			return
		}
		got := lastLines(s, n)
		if !strings.Contains(s, got) {
			t.Fatalf("tail %q is not part of %q", got, s)
		}
		if c := strings.Count(got, "\n"); n > 0 && c > n-1 {
			t.Fatalf("%d lines asked, got %d", n, c+1)
		}
		_ = llamaAdapter{}.parseVersion(s)
		_ = vllmAdapter{}.parseVersion(s)
		_ = looksOOM(s)
	})
}
