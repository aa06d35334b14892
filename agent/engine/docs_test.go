package engine

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/goccy/go-yaml"
)

// Every engine block in docs/engines.md decodes strictly and validates, so
// the documentation cannot drift from the code.
func TestDocsExamples(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "engines.md"))
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	text := strings.ReplaceAll(string(doc), "/models", root)
	blocks := regexp.MustCompile("(?s)```yaml\n(.*?)```").FindAllStringSubmatch(text, -1)
	if len(blocks) < 5 {
		t.Fatalf("found %d yaml blocks", len(blocks))
	}
	env := Env{ModelRoots: []string{root}}
	n := 0
	for i, b := range blocks {
		var tree any
		if err := yaml.Unmarshal([]byte(b[1]), &tree); err != nil {
			t.Errorf("block %d: %v\n%s", i, err, b[1])
			continue
		}
		for _, eng := range engineBlocks(tree) {
			raw, err := yaml.Marshal(eng)
			if err != nil {
				t.Fatal(err)
			}
			var cfg Config
			if err := yaml.NewDecoder(bytes.NewReader(raw), yaml.DisallowUnknownField()).Decode(&cfg); err != nil {
				t.Errorf("block %d: %v\n%s", i, err, raw)
				continue
			}
			for _, p := range []string{cfg.Model, cfg.MMProj} {
				if p == "" || cfg.Kind == KindExternal || cfg.Kind == KindSim {
					continue
				}
				if !filepath.IsAbs(p) {
					p = filepath.Join(root, p)
				}
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, nil, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if err := cfg.Validate(env); err != nil {
				t.Errorf("block %d: %v\n%s", i, err, raw)
			}
			n++
		}
	}
	if n < 8 {
		t.Errorf("checked %d engine blocks, expected at least 8", n)
	}
}

// engineBlocks finds the values of "engine" keys in a decoded YAML tree, or
// the tree itself when it is an engine block's parent without deployments.
func engineBlocks(v any) []any {
	var out []any
	switch x := v.(type) {
	case map[string]any:
		for k, val := range x {
			if k == "engine" {
				out = append(out, val)
				continue
			}
			out = append(out, engineBlocks(val)...)
		}
	case []any:
		for _, e := range x {
			out = append(out, engineBlocks(e)...)
		}
	}
	return out
}

// docs/engines.md's table of kinds has a row for each registered kind and
// no other, with the kind's default startup_timeout.
func TestDocsKindTable(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "engines.md"))
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("(?m)^\\| `([a-z]+)` +\\|.*\\| *([0-9]+[hms]) *\\|$")
	documented := map[string]bool{}
	for _, m := range row.FindAllStringSubmatch(string(doc), -1) {
		kind, wait := m[1], m[2]
		documented[kind] = true
		if _, ok := kindNamed(kind); !ok {
			t.Errorf("docs/engines.md lists kind %q, which is not registered", kind)
			continue
		}
		if d, err := time.ParseDuration(wait); err != nil || d != DefaultStartupTimeout(kind) {
			t.Errorf("docs/engines.md: kind %s waits %s, the code %s", kind, wait, DefaultStartupTimeout(kind))
		}
	}
	for _, kind := range Kinds() {
		if !documented[kind] {
			t.Errorf("kind %s has no row in docs/engines.md's table of kinds", kind)
		}
	}
}
