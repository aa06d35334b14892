package sweepfile

import (
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"

	"github.com/vlmfleet/vlmfleet/controller/api"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// allocated returns the bytes f allocates (runtime.MemStats.TotalAlloc,
// so everything f asked for, freed or not, whatever the collector did).
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// aliasBomb is anchors that each alias the one before nine times: the
// decoder walks 9^8 values for 400 bytes.
func aliasBomb() string {
	var b strings.Builder
	b.WriteString("name: x\nagents: [&a0 lol")
	for i := 1; i <= 8; i++ {
		fmt.Fprintf(&b, ", &a%d [%s]", i, strings.TrimSuffix(strings.Repeat(fmt.Sprintf("*a%d,", i-1), 9), ","))
	}
	b.WriteString("]\n")
	return b.String()
}

// nestedByIndent is n mappings, each indented one space under the last.
func nestedByIndent(n int) string {
	var b strings.Builder
	b.WriteString("name: x\nworkload:\n")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "%sk%d:\n", strings.Repeat(" ", i+1), i)
	}
	return b.String()
}

// A sweep file that would make the YAML parser spend far more than its
// size is refused before the parser runs, naming where and the limit: its
// decoding allocates a few times the file, not gigabytes.
func TestSweepYAMLPastTheLimitsIsRefusedCheaply(t *testing.T) {
	const n = 40000
	const bound = 16 << 20
	for _, tc := range []struct {
		name, yaml string
		line       int
		want       string
	}{
		{"40k [ (80 KB)", "name: x\nworkload:\n  cameras: " + strings.Repeat("[", n) + strings.Repeat("]", n), 3, "nested more than 32 deep"},
		{"{a: nested 20k times", "name: x\nworkload:\n  cameras: " + strings.Repeat("{a: ", n/2) + "1" + strings.Repeat("}", n/2), 3, "nested more than 32 deep"},
		{"- 20k times on one line", "name: x\nworkload:\n  cameras:\n    " + strings.Repeat("- ", n/2) + "1\n", 4, "nested more than 32 deep"},
		{"- [ 20k times", "name: x\nworkload:\n  cameras:\n    " + strings.Repeat("- [", n/2) + "1\n", 4, "nested more than 32 deep"},
		{"[ with quoted closing brackets", "name: x\nworkload:\n  cameras: " + strings.Repeat(`["]", `, n/4) + "1" + strings.Repeat("]", n/4), 3, "nested more than 32 deep"},
		{"nesting by indentation", nestedByIndent(40), 34, "nested more than 32 deep"},
		{"alias bomb", aliasBomb(), 2, "anchors, aliases"},
		{"merge key", "name: x\nworkload: {<<: {cameras: [1]}}\n", 2, "anchors, aliases"},
		{"30k values", "name: x\nworkload:\n  cameras: [" + strings.Repeat("1,", 30000) + "1]\n", 3, "more than 8192 values"},
		{"a 70 KB prompt", "name: x\nworkload:\n  prompt: " + strings.Repeat("a", 70<<10) + "\n", 0, "at most 65536"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body, _ := json.Marshal(map[string]string{"yaml": tc.yaml})
			var err error
			used := allocated(func() { _, err = Decode(body) })
			t.Logf("%d bytes: %.2f MB allocated", len(tc.yaml), float64(used)/1e6)
			if used > bound {
				t.Errorf("decoding %d bytes allocated %.1f MB, want under %d MB", len(tc.yaml), float64(used)/1e6, bound>>20)
			}
			var in *api.SweepInputError
			var bad *api.BadSweepError
			if !errors.As(err, &in) || !errors.As(err, &bad) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want a api.BadSweepError saying %q", err, tc.want)
			}
			if in.Line != tc.line || (tc.line > 0 && in.Column == 0) {
				t.Errorf("refused at line %d column %d, want line %d: %v", in.Line, in.Column, tc.line, err)
			}
		})
	}
}

// What a sweep file writes, brackets and indicators inside quotes,
// comments and block text included, decodes within the limits.
func TestSweepYAMLWithinTheLimitsDecodes(t *testing.T) {
	const file = `---
# a comment with [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[ and & and *x
name: "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[ it's"
agents: ['a1', "a2"]   # ]]]]]]]]
agent_labels: {site: lab1}
workload:
  prompt: |
    - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - -
    **Describe** the scene & say what's [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[
    *everything* you see.
  sizes: [480p,
    720p]
  cameras:
    - 1
    - 2
  multi_image_sizes: []
`
	s, err := DecodeYAML([]byte(file))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(s.Name, "[[[") || len(s.Agents) != 2 || !strings.Contains(s.Workload.Prompt, "*everything*") || len(s.Workload.Cameras) != 2 {
		t.Errorf("decoded %+v", s)
	}
}

// depthVisitor finds the deepest node of a parsed file.
type depthVisitor struct {
	depth int
	max   *int
}

func (v depthVisitor) Visit(ast.Node) ast.Visitor {
	*v.max = max(*v.max, v.depth)
	return depthVisitor{v.depth + 1, v.max}
}

// Whatever the limits let through, the parser finds no deeper than they
// allow (at most three nodes a level), and decoding allocates no more than
// a bound; what is decoded is valid.
func FuzzDecodeSweepYAML(f *testing.F) {
	for _, seed := range []string{
		sweepYAMLWithBadCamera,
		"agents: [a1]\nworkload:\n  cameras: [1, 2]\n",
		"name: x\nagent_labels: {site: lab1}\nworkload:\n  prompt: |\n    - [x]\n  sizes: ['720p']\n",
		"a: &a [1]\nb: *a\n",
		"- - - [[{a: [b, \"]\"]}]]\n",
		"x: 'it''s [' # ]\ny: \"\\\"[\"\n",
		"? a\n: b\n",
		"a:\n b:\n  c:\n   - d\n",
		"name: x\nworkload:\n  cameras: " + strings.Repeat("[", 40) + strings.Repeat("]", 40),
		"workload:\n  profile:\n    isl: [1000, 20000]\n    osl: [200]\n    image_size: [8x8]\n    concurrency: auto\n    extra_body: {tools: [{a: 1}], 1: x}\n",
		"workload:\n  profile: {concurrency: [1, 2], no_stream: true}\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var s protocol.Sweep
		var err error
		used := allocated(func() { s, err = DecodeYAML(data) })
		if used > 64<<20 {
			t.Fatalf("decoding %d bytes allocated %d MB", len(data), used>>20)
		}
		if err == nil {
			if verr := Check(s); verr != nil {
				t.Fatalf("decoded sweep fails validation: %v", verr)
			}
		}
		if checkSweepYAML(data) != nil {
			return
		}
		file, perr := parser.ParseBytes(data, 0)
		if perr != nil {
			return
		}
		deepest := 0
		for _, doc := range file.Docs {
			ast.Walk(depthVisitor{max: &deepest}, doc)
		}
		if deepest > 3*maxYAMLDepth+8 {
			t.Fatalf("the limits let through a file %d nodes deep", deepest)
		}
	})
}
