package sweepfile

import (
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/token"

	"github.com/vlmfleet/vlmfleet/controller/api"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// maxSweepErrors is how many problems of one sweep file are reported at
// once: enough to fix a file in one go, few enough to read.
const maxSweepErrors = 5

// shapeHints are the known mistakes of a field, by its path without list
// indices, said as docs/sweeps.md says them.
var shapeHints = map[string]string{
	"workload.search":              "a search ceiling is a number of cameras: write `search: 64`, not `search: true` (0 or left out: the ladder only)",
	"workload.judgement":           "judgement is a mapping: `judgement: {statistic: p90, target_sec: 2}`",
	"workload.cameras":             "cameras is a list of camera levels: `cameras: [1, 2, 4, 8]`",
	"workload.profile.isl":         "isl is a list of text lengths in tokens: `isl: [1000, 20000]`",
	"workload.profile.osl":         "osl is a list of output lengths in tokens: `osl: [1000, 2000]` (one for every isl: `osl: [2000]`)",
	"workload.profile.image_size":  "image_size is a list of WxH sizes: `image_size: [1120x1120]`",
	"workload.profile.concurrency": "concurrency is a list of levels, `concurrency: [1, 2, 4]`, or `concurrency: auto`",
	"workload.profile.extra_body":  "extra_body is a mapping merged into every request: `extra_body: {tools: [...]}`",
	"workload.profile.no_stream":   "no_stream is true or false: `no_stream: true` sends without streaming",
	"agents":                       "agents is a list of agent ids: `agents: [orin-nx-01]`",
	"deployments":                  "deployments is a list of deployment ids: `deployments: [qwen3-vl-4b-q8]`",
	"power_modes":                  "power_modes is a list of nvpmodel modes: `power_modes: [15W, MAXN]`",
	"power_limits_w":               "power_limits_w is a list of watts: `power_limits_w: [300, 450]`",
}

// shapeCheck walks a sweep file's mappings against the fields of
// protocol.Sweep, as the decoder would, but without stopping at the first
// problem: every unknown field (with the field it most likely meant) and
// every value of the wrong kind, each at its line and column.
type shapeCheck struct {
	errs []*api.SweepInputError
	// typed is set when a value had the wrong kind: the decoder would stop
	// at it, so nothing after the walk can add to what it found.
	typed bool
}

func checkSweepShape(doc ast.Node) *shapeCheck {
	c := &shapeCheck{}
	if doc != nil {
		c.node(doc, reflect.TypeOf(protocol.Sweep{}), "")
	}
	return c
}

func (c *shapeCheck) add(tk *token.Token, field, format string, args ...any) {
	e := &api.SweepInputError{Field: field, Err: fmt.Errorf(format, args...)}
	if tk != nil && tk.Position != nil {
		e.Line, e.Column = tk.Position.Line, tk.Position.Column
	}
	c.errs = append(c.errs, e)
}

func (c *shapeCheck) node(n ast.Node, t reflect.Type, path string) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if n.Type() == ast.NullType || t == reflect.TypeOf(time.Time{}) {
		return
	}
	if t == yamlConcurrencyType {
		c.checkConcurrency(n, path)
		return
	}
	switch t.Kind() {
	case reflect.Struct:
		values, ok := mappingValues(n)
		if !ok {
			c.wrongKind(n, path, "a mapping of fields (name: value)")
			return
		}
		c.fields(values, t, path)
	case reflect.Slice:
		seq, ok := n.(*ast.SequenceNode)
		if !ok {
			c.wrongKind(n, path, "a list ([a, b] or one \"- \" item a line)")
			return
		}
		for i, v := range seq.Values {
			c.node(v, t.Elem(), fmt.Sprintf("%s[%d]", path, i))
		}
	case reflect.Map:
		if _, ok := mappingValues(n); !ok {
			c.wrongKind(n, path, "a mapping (name: value)")
		}
	default:
		if want := scalarMismatch(n, t.Kind()); want != "" {
			c.wrongKind(n, path, want)
		}
	}
}

// fields checks a mapping's keys against the struct's fields and each
// value against its field's type.
func (c *shapeCheck) fields(values []*ast.MappingValueNode, t reflect.Type, path string) {
	known := fieldsByName(t)
	for _, mv := range values {
		key := mv.Key.GetToken()
		name := key.Value
		f, ok := known[name]
		if !ok {
			c.add(key, "", "unknown field %q %s", name, unknownFieldHint(name, path, known))
			continue
		}
		ft := f.Type
		if joinField(path, name) == "workload.profile" {
			// A profile is written in its own form, not the job's JSON.
			ft = reflect.TypeOf(yamlProfile{})
		}
		c.node(mv.Value, ft, joinField(path, name))
	}
}

func (c *shapeCheck) wrongKind(n ast.Node, path, want string) {
	c.typed = true
	what := path
	if what == "" {
		what = "the sweep file"
	}
	msg := fmt.Sprintf("%s: %s, want %s", what, describeNode(n), want)
	if h := shapeHints[stripIndices(path)]; h != "" {
		msg += "; " + h
	}
	c.add(n.GetToken(), path, "%s", msg)
}

// scalarMismatch is what the field takes when the node cannot be decoded
// into a scalar of kind k; "" when it can (or when only the decoder knows).
func scalarMismatch(n ast.Node, k reflect.Kind) string {
	switch n.Type() {
	case ast.MappingType, ast.MappingValueType, ast.SequenceType:
		return scalarWant(k)
	}
	switch k {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if n.Type() == ast.BoolType || (n.Type() == ast.StringType && !isNumber(n)) {
			return scalarWant(k)
		}
	case reflect.Float32, reflect.Float64:
		if n.Type() == ast.BoolType || (n.Type() == ast.StringType && !isNumber(n)) {
			return scalarWant(k)
		}
	case reflect.Bool:
		if n.Type() != ast.BoolType {
			return scalarWant(k)
		}
	}
	return ""
}

func scalarWant(k reflect.Kind) string {
	switch k {
	case reflect.Bool:
		return "true or false"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.String:
		return "text"
	default:
		return "a whole number"
	}
}

func isNumber(n ast.Node) bool {
	_, err := strconv.ParseFloat(strings.TrimSpace(n.GetToken().Value), 64)
	return err == nil
}

// describeNode names what was written, for "X, want Y".
func describeNode(n ast.Node) string {
	switch n.Type() {
	case ast.MappingType, ast.MappingValueType:
		return "a mapping"
	case ast.SequenceType:
		return "a list"
	case ast.StringType, ast.LiteralType:
		return fmt.Sprintf("the text %q", n.GetToken().Value)
	default:
		return n.GetToken().Value
	}
}

// mappingValues is the key-value pairs of a mapping node.
func mappingValues(n ast.Node) ([]*ast.MappingValueNode, bool) {
	switch m := n.(type) {
	case *ast.MappingNode:
		return m.Values, true
	case *ast.MappingValueNode:
		return []*ast.MappingValueNode{m}, true
	}
	return nil, false
}

// fieldsByName maps a struct's field names as the decoder reads them (the
// json tag's name, as goccy/go-yaml falls back to it) to the fields.
func fieldsByName(t reflect.Type) map[string]reflect.StructField {
	m := map[string]reflect.StructField{}
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		m[name] = f
	}
	return m
}

// unknownFieldHint says what an unknown field most likely meant: a field
// of the same mapping a few letters away, else the fields it has.
func unknownFieldHint(name, path string, known map[string]reflect.StructField) string {
	where := "at the top level"
	if path != "" {
		where = "in " + path
	}
	names := make([]string, 0, len(known))
	for k := range known {
		names = append(names, k)
	}
	slices.Sort(names)
	if best := nearestName(name, names); best != "" {
		return fmt.Sprintf("%s; did you mean %q?", where, best)
	}
	return fmt.Sprintf("%s; the fields there are %s", where, strings.Join(names, ", "))
}

// nearestName is the name within a third of its length (at least 2) in
// edit distance of s, the nearest first; "" when none is that near.
func nearestName(s string, names []string) string {
	best, bestD := "", -1
	for _, n := range names {
		d := editDistance(strings.ToLower(s), n)
		if d <= max(2, len(n)/3) && (bestD < 0 || d < bestD) {
			best, bestD = n, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance of a and b, in bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

func joinField(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// stripIndices: workload.cameras[2] → workload.cameras.
func stripIndices(p string) string {
	var b strings.Builder
	depth := 0
	for _, r := range p {
		switch {
		case r == '[':
			depth++
		case r == ']':
			depth--
		case depth == 0:
			b.WriteRune(r)
		}
	}
	return b.String()
}
