package tinyvlm

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"unicode/utf8"
)

// parsed is a GGUF file read back by an independent reader.
type parsed struct {
	version uint32
	kvs     map[string]any
	order   []string
	tensors []tensorInfo
	dataOff uint64
	size    int64
}

type tensorInfo struct {
	name   string
	dims   []uint64
	typ    uint32
	offset uint64
}

type rd struct {
	r   io.Reader
	err error
}

func (r *rd) u8() uint8 { var b [1]byte; r.read(b[:]); return b[0] }
func (r *rd) u32() uint32 {
	var b [4]byte
	r.read(b[:])
	return binary.LittleEndian.Uint32(b[:])
}
func (r *rd) u64() uint64 {
	var b [8]byte
	r.read(b[:])
	return binary.LittleEndian.Uint64(b[:])
}
func (r *rd) read(b []byte) {
	if r.err == nil {
		_, r.err = io.ReadFull(r.r, b)
	}
}
func (r *rd) str() string {
	n := r.u64()
	if n > 1<<20 {
		r.err = fmt.Errorf("string of %d bytes", n)
		return ""
	}
	b := make([]byte, n)
	r.read(b)
	return string(b)
}

func (r *rd) scalar(t uint32) any {
	switch t {
	case typeUint32:
		return r.u32()
	case typeInt32:
		return int32(r.u32())
	case typeFloat32:
		return math.Float32frombits(r.u32())
	case typeBool:
		return r.u8() != 0
	case typeString:
		return r.str()
	}
	r.err = fmt.Errorf("value type %d", t)
	return nil
}

func parse(t *testing.T, path string) parsed {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	br := bytes.NewReader(b)
	r := &rd{r: br}
	var magic [4]byte
	r.read(magic[:])
	if string(magic[:]) != "GGUF" {
		t.Fatalf("%s: magic %q", path, magic)
	}
	p := parsed{kvs: map[string]any{}, size: int64(len(b))}
	p.version = r.u32()
	nt, nkv := r.u64(), r.u64()
	for i := uint64(0); i < nkv && r.err == nil; i++ {
		k := r.str()
		typ := r.u32()
		var v any
		if typ == typeArray {
			et, n := r.u32(), r.u64()
			var arr []any
			for j := uint64(0); j < n && r.err == nil; j++ {
				arr = append(arr, r.scalar(et))
			}
			v = arr
		} else {
			v = r.scalar(typ)
		}
		p.kvs[k] = v
		p.order = append(p.order, k)
	}
	for i := uint64(0); i < nt && r.err == nil; i++ {
		ti := tensorInfo{name: r.str()}
		nd := r.u32()
		for j := uint32(0); j < nd; j++ {
			ti.dims = append(ti.dims, r.u64())
		}
		ti.typ = r.u32()
		ti.offset = r.u64()
		p.tensors = append(p.tensors, ti)
	}
	if r.err != nil {
		t.Fatalf("%s: %v", path, r.err)
	}
	p.dataOff = pad(uint64(len(b)) - uint64(br.Len()))
	return p
}

func (p parsed) tensor(t *testing.T, name string) tensorInfo {
	t.Helper()
	for _, ti := range p.tensors {
		if ti.name == name {
			return ti
		}
	}
	t.Fatalf("no tensor %s", name)
	return tensorInfo{}
}

func dimsEq(a []uint64, b ...uint64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func elemSize(typ uint32) uint64 {
	if typ == tensorF16 {
		return 2
	}
	return 4
}

// checkLayout holds the tensors to GGUF's layout: each at an aligned
// offset, in order, without overlap, and the last one ending the file.
func checkLayout(t *testing.T, path string, p parsed) {
	t.Helper()
	var next uint64
	for _, ti := range p.tensors {
		n := elemSize(ti.typ)
		for _, d := range ti.dims {
			n *= d
		}
		if ti.offset%alignment != 0 || ti.offset < next {
			t.Errorf("%s: tensor %s at offset %d (next free %d)", path, ti.name, ti.offset, next)
		}
		next = ti.offset + n
	}
	if end := p.dataOff + pad(next); end != uint64(p.size) {
		t.Errorf("%s: tensors end at %d, file is %d bytes", path, end, p.size)
	}
}

func TestWriteReadsBackAsTheCheckedModel(t *testing.T) {
	dir := t.TempDir()
	f, err := Write(dir, 1)
	if err != nil {
		t.Fatal(err)
	}
	m := parse(t, f.Model)
	if m.version != 3 {
		t.Errorf("version %d, want 3", m.version)
	}
	want := map[string]any{
		"general.architecture":                   "llama",
		"llama.embedding_length":                 uint32(64),
		"llama.block_count":                      uint32(2),
		"llama.feed_forward_length":              uint32(128),
		"llama.attention.head_count":             uint32(4),
		"llama.attention.head_count_kv":          uint32(2),
		"llama.attention.layer_norm_rms_epsilon": float32(1e-5),
		"llama.rope.freq_base":                   float32(10000),
		"llama.rope.dimension_count":             uint32(16),
		"llama.context_length":                   uint32(8192),
		"tokenizer.ggml.model":                   "llama",
		"tokenizer.ggml.bos_token_id":            uint32(1),
		"tokenizer.ggml.eos_token_id":            uint32(2),
		"tokenizer.ggml.unknown_token_id":        uint32(0),
		"tokenizer.ggml.add_bos_token":           true,
		"tokenizer.chat_template":                ChatTemplate,
	}
	for k, v := range want {
		if m.kvs[k] != v {
			t.Errorf("model %s = %#v, want %#v", k, m.kvs[k], v)
		}
	}
	toks, _ := m.kvs["tokenizer.ggml.tokens"].([]any)
	types, _ := m.kvs["tokenizer.ggml.token_type"].([]any)
	scores, _ := m.kvs["tokenizer.ggml.scores"].([]any)
	if len(toks) != 354 || len(types) != len(toks) || len(scores) != len(toks) {
		t.Fatalf("vocabulary: %d tokens, %d types, %d scores; want 354 each", len(toks), len(types), len(scores))
	}
	if toks[0] != "<unk>" || toks[1] != "<s>" || toks[2] != "</s>" || toks[3] != "<0x00>" || toks[258] != "<0xFF>" {
		t.Errorf("vocabulary starts %v … %v", toks[:4], toks[258])
	}
	if types[0] != tokUnknown || types[1] != tokControl || types[2] != tokControl || types[3] != tokByte || types[259] != tokNormal {
		t.Errorf("token types start %v, then %v", types[:4], types[259])
	}
	if toks[259] != "▁the" || scores[259] != float32(0) || scores[260] != float32(-1) {
		t.Errorf("first word %q score %v, next %v; want ▁the 0, -1", toks[259], scores[259], scores[260])
	}
	seen := map[string]bool{}
	for _, tok := range toks {
		s := tok.(string)
		if !utf8.ValidString(s) || seen[s] {
			t.Errorf("token %q invalid or repeated", s)
		}
		seen[s] = true
	}

	vocab := uint64(len(toks))
	if ti := m.tensor(t, "token_embd.weight"); !dimsEq(ti.dims, 64, vocab) || ti.typ != tensorF16 {
		t.Errorf("token_embd.weight %v type %d", ti.dims, ti.typ)
	}
	if ti := m.tensor(t, "output.weight"); !dimsEq(ti.dims, 64, vocab) || ti.typ != tensorF16 {
		t.Errorf("output.weight %v type %d", ti.dims, ti.typ)
	}
	if ti := m.tensor(t, "output_norm.weight"); !dimsEq(ti.dims, 64) || ti.typ != tensorF32 {
		t.Errorf("output_norm.weight %v type %d", ti.dims, ti.typ)
	}
	for b := 0; b < 2; b++ {
		for name, dims := range map[string][]uint64{
			"attn_norm.weight": {64}, "attn_q.weight": {64, 64}, "attn_k.weight": {64, 32},
			"attn_v.weight": {64, 32}, "attn_output.weight": {64, 64}, "ffn_norm.weight": {64},
			"ffn_gate.weight": {64, 128}, "ffn_up.weight": {64, 128}, "ffn_down.weight": {128, 64},
		} {
			if ti := m.tensor(t, fmt.Sprintf("blk.%d.%s", b, name)); !dimsEq(ti.dims, dims...) {
				t.Errorf("blk.%d.%s %v, want %v", b, name, ti.dims, dims)
			}
		}
	}
	if len(m.tensors) != 3+2*9 {
		t.Errorf("model has %d tensors, want 21", len(m.tensors))
	}
	checkLayout(t, f.Model, m)
	if m.size > 500<<10 {
		t.Errorf("model is %d bytes; the checked one was 397 KB", m.size)
	}

	p := parse(t, f.Projector)
	for k, v := range map[string]any{
		"general.architecture": "clip", "general.type": "mmproj", "clip.projector_type": "pixtral",
		"clip.has_vision_encoder": true, "clip.use_silu": true,
		"clip.vision.image_size": uint32(1024), "clip.vision.patch_size": uint32(64),
		"clip.vision.embedding_length": uint32(64), "clip.vision.feed_forward_length": uint32(128),
		"clip.vision.block_count": uint32(2), "clip.vision.attention.head_count": uint32(4),
		"clip.vision.attention.layer_norm_epsilon": float32(1e-5), "clip.vision.projection_dim": uint32(64),
	} {
		if p.kvs[k] != v {
			t.Errorf("projector %s = %#v, want %#v", k, p.kvs[k], v)
		}
	}
	for _, k := range []string{"clip.vision.image_mean", "clip.vision.image_std"} {
		if a, _ := p.kvs[k].([]any); len(a) != 3 {
			t.Errorf("projector %s = %v, want 3 floats", k, p.kvs[k])
		}
	}
	if ti := p.tensor(t, "v.patch_embd.weight"); !dimsEq(ti.dims, 64, 64, 3, 64) || ti.typ != tensorF16 {
		t.Errorf("v.patch_embd.weight %v type %d", ti.dims, ti.typ)
	}
	for name, dims := range map[string][]uint64{
		"v.pre_ln.weight": {64}, "v.blk.1.attn_out.weight": {64, 64}, "v.blk.0.ffn_down.weight": {128, 64},
		"mm.1.weight": {64, 64}, "mm.1.bias": {64}, "mm.2.weight": {64, 64}, "mm.2.bias": {64},
		"v.token_embd.img_break": {64},
	} {
		if ti := p.tensor(t, name); !dimsEq(ti.dims, dims...) {
			t.Errorf("%s %v, want %v", name, ti.dims, dims)
		}
	}
	checkLayout(t, f.Projector, p)
}

// The output rows of byte and special tokens are zero, so that only whole
// words and letters can be sampled; the rest are not.
func TestOutputRowsOfByteTokensAreZero(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 0))
	_, ts := textModel(rng)
	var out tensor
	for _, x := range ts {
		if x.name == "output.weight" {
			out = x
		}
	}
	for tok := 0; tok < int(out.dims[1]); tok++ {
		zero := true
		for _, h := range out.f16[tok*embd : (tok+1)*embd] {
			zero = zero && h&0x7fff == 0
		}
		if zero != (tok < 3+256) {
			t.Fatalf("token %d: row zero = %v", tok, zero)
		}
	}
}

func TestWriteIsDeterministic(t *testing.T) {
	a, err := Write(t.TempDir(), 7)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Write(t.TempDir(), 7)
	if err != nil {
		t.Fatal(err)
	}
	c, err := Write(t.TempDir(), 8)
	if err != nil {
		t.Fatal(err)
	}
	read := func(p string) []byte {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	if !bytes.Equal(read(a.Model), read(b.Model)) || !bytes.Equal(read(a.Projector), read(b.Projector)) {
		t.Error("the same seed wrote different files")
	}
	if bytes.Equal(read(a.Model), read(c.Model)) {
		t.Error("another seed wrote the same model")
	}
}

func TestF16(t *testing.T) {
	for _, c := range []struct {
		in   float32
		want uint16
	}{{0, 0}, {1, 0x3c00}, {-2, 0xc000}, {0.5, 0x3800}, {65504, 0x7bff}, {1e6, 0x7c00}, {1e-9, 0}, {0.1, 0x2e66}} {
		if got := f16(c.in); got != c.want {
			t.Errorf("f16(%g) = %#04x, want %#04x", c.in, got, c.want)
		}
	}
}

func TestWriteRefusesMismatchedTensor(t *testing.T) {
	err := write(io.Discard, nil, []tensor{{name: "x", dims: []uint64{4}, f32: make([]float32, 3)}})
	if err == nil || !strings.Contains(err.Error(), "tensor x") {
		t.Errorf("err = %v, want one naming tensor x", err)
	}
	err = write(io.Discard, []kv{{"k", 1.5}}, nil)
	if err == nil || !strings.Contains(err.Error(), "key k") {
		t.Errorf("err = %v, want one naming key k", err)
	}
}
