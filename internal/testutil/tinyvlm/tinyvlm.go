// Package tinyvlm writes a tiny random-weight vision-language model as two
// GGUF files, a llama text model and a pixtral projector, that llama.cpp's
// llama-server and Ollama load and serve image chats with. No model can be
// downloaded where the tests run, so the real-engine tests make their own;
// the keys and tensors are the ones checked against Ollama 0.17.4 and
// llama.cpp (see ../shared/engines/real-engine-from-registries.md).
//
// The weights are random, so the answers are nonsense, but they are valid
// UTF-8 text: only whole-word and single-letter tokens can win.
package tinyvlm

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strconv"
)

// The text model's shape.
const (
	embd      = 64
	blocks    = 2
	ffn       = 128
	heads     = 4
	headsKV   = 2
	headDim   = embd / heads
	ctxLength = 8192
)

// The projector's shape: 1024-pixel images in 64-pixel patches.
const (
	visionEmbd   = 64
	visionFFN    = 128
	visionBlocks = 2
	visionHeads  = 4
	imageSize    = 1024
	patchSize    = 64
)

// Token types of a SentencePiece vocabulary as GGUF stores them.
const (
	tokNormal  int32 = 1
	tokUnknown int32 = 2
	tokControl int32 = 3
	tokByte    int32 = 6
)

// words are whole words with SentencePiece's space mark, so that replies
// read as words; letters fill in the rest.
var words = []string{
	"the", "a", "car", "truck", "bus", "bike", "person", "people", "road", "street",
	"lane", "sign", "light", "red", "green", "yellow", "stop", "left", "right", "ahead",
	"tree", "trees", "house", "door", "window", "sky", "cloud", "sun", "rain", "snow",
	"near", "far", "on", "in", "at", "with", "and", "of", "is", "are",
	"parked", "moving", "crossing", "walking", "traffic", "camera", "view", "scene", "image", "shows",
	"white", "black", "blue", "gray", "small", "large", "two", "three", "one", "no",
	"dog", "cat", "bird", "wall", "fence", "gate", "pole",
}

// letters are single characters: the 26 letters, the space mark and a stop.
var letters = func() []string {
	var l []string
	for c := 'a'; c <= 'z'; c++ {
		l = append(l, string(c))
	}
	return append(l, "▁", ".")
}()

// Vocab returns the tokens, scores and types: <unk>, <s>, </s>, the 256
// byte tokens, then words and letters (354 in all).
func Vocab() (tokens []string, scores []float32, types []int32) {
	tokens = []string{"<unk>", "<s>", "</s>"}
	types = []int32{tokUnknown, tokControl, tokControl}
	for b := 0; b < 256; b++ {
		tokens = append(tokens, fmt.Sprintf("<0x%02X>", b))
		types = append(types, tokByte)
	}
	for _, w := range words {
		tokens = append(tokens, "▁"+w)
		types = append(types, tokNormal)
	}
	for _, l := range letters {
		tokens = append(tokens, l)
		types = append(types, tokNormal)
	}
	scores = make([]float32, len(tokens))
	for i := 3 + 256; i < len(tokens); i++ {
		scores[i] = -float32(i - 3 - 256)
	}
	return tokens, scores, types
}

// ChatTemplate is the text model's tokenizer.chat_template.
const ChatTemplate = "{{ bos_token }}{% for message in messages %}{% if message['role'] == 'user' %}[INST] {{ message['content'] }} [/INST]{% else %}{{ message['content'] }}{{ eos_token }}{% endif %}{% endfor %}"

// Files are the two written files.
type Files struct {
	Model, Projector string
}

// Write writes tiny-llama.gguf and tiny-mmproj.gguf into dir. The same seed
// writes the same bytes.
func Write(dir string, seed uint64) (Files, error) {
	rng := rand.New(rand.NewPCG(seed, 0x7e57))
	f := Files{Model: filepath.Join(dir, "tiny-llama.gguf"), Projector: filepath.Join(dir, "tiny-mmproj.gguf")}
	kvs, ts := textModel(rng)
	if err := writeFile(f.Model, kvs, ts); err != nil {
		return Files{}, err
	}
	kvs, ts = projector(rng)
	if err := writeFile(f.Projector, kvs, ts); err != nil {
		return Files{}, err
	}
	return f, nil
}

// matrix is a random F16 tensor with GGUF dims (in, out).
func matrix(rng *rand.Rand, name string, scale float64, dims ...uint64) tensor {
	n := uint64(1)
	for _, d := range dims {
		n *= d
	}
	v := make([]uint16, n)
	for i := range v {
		v[i] = f16(float32(rng.NormFloat64() * scale))
	}
	return tensor{name: name, dims: dims, f16: v}
}

// ones is an F32 norm weight of n ones.
func ones(name string, n uint64) tensor {
	v := make([]float32, n)
	for i := range v {
		v[i] = 1
	}
	return tensor{name: name, dims: []uint64{n}, f32: v}
}

// vector is a random F32 vector: llama.cpp joins it to F32 activations.
func vector(rng *rand.Rand, name string, scale float64, n uint64) tensor {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(rng.NormFloat64() * scale)
	}
	return tensor{name: name, dims: []uint64{n}, f32: v}
}

func zeros(name string, n uint64) tensor {
	return tensor{name: name, dims: []uint64{n}, f32: make([]float32, n)}
}

func textModel(rng *rand.Rand) ([]kv, []tensor) {
	tokens, scores, types := Vocab()
	vocab := uint64(len(tokens))
	kvs := []kv{
		{"general.architecture", "llama"},
		{"general.name", "tiny-vlm"},
		{"general.file_type", uint32(1)}, // mostly F16
		{"llama.context_length", uint32(ctxLength)},
		{"llama.embedding_length", uint32(embd)},
		{"llama.block_count", uint32(blocks)},
		{"llama.feed_forward_length", uint32(ffn)},
		{"llama.attention.head_count", uint32(heads)},
		{"llama.attention.head_count_kv", uint32(headsKV)},
		{"llama.attention.layer_norm_rms_epsilon", float32(1e-5)},
		{"llama.rope.freq_base", float32(10000)},
		{"llama.rope.dimension_count", uint32(headDim)},
		{"llama.vocab_size", uint32(vocab)},
		{"tokenizer.ggml.model", "llama"},
		{"tokenizer.ggml.tokens", tokens},
		{"tokenizer.ggml.scores", scores},
		{"tokenizer.ggml.token_type", types},
		{"tokenizer.ggml.bos_token_id", uint32(1)},
		{"tokenizer.ggml.eos_token_id", uint32(2)},
		{"tokenizer.ggml.unknown_token_id", uint32(0)},
		{"tokenizer.ggml.add_bos_token", true},
		{"tokenizer.ggml.add_eos_token", false},
		{"tokenizer.chat_template", ChatTemplate},
	}
	ts := []tensor{matrix(rng, "token_embd.weight", 1, embd, vocab)}
	for b := 0; b < blocks; b++ {
		p := "blk." + strconv.Itoa(b) + "."
		ts = append(ts,
			ones(p+"attn_norm.weight", embd),
			matrix(rng, p+"attn_q.weight", 0.1, embd, embd),
			matrix(rng, p+"attn_k.weight", 0.1, embd, headsKV*headDim),
			matrix(rng, p+"attn_v.weight", 0.1, embd, headsKV*headDim),
			matrix(rng, p+"attn_output.weight", 0.1, embd, embd),
			ones(p+"ffn_norm.weight", embd),
			matrix(rng, p+"ffn_gate.weight", 0.1, embd, ffn),
			matrix(rng, p+"ffn_up.weight", 0.1, embd, ffn),
			matrix(rng, p+"ffn_down.weight", 0.1, ffn, embd),
		)
	}
	// Large output rows make one word or letter clearly the likeliest;
	// zero rows for byte and special tokens keep their logit at 0, below
	// the best of the rest, so no reply ends inside a UTF-8 sequence.
	out := matrix(rng, "output.weight", 1, embd, vocab)
	for tok := 0; tok < 3+256; tok++ {
		for i := 0; i < embd; i++ {
			out.f16[tok*embd+i] = 0
		}
	}
	ts = append(ts, ones("output_norm.weight", embd), out)
	return kvs, ts
}

func projector(rng *rand.Rand) ([]kv, []tensor) {
	kvs := []kv{
		{"general.architecture", "clip"},
		{"general.type", "mmproj"},
		{"general.name", "tiny-vlm-mmproj"},
		{"general.file_type", uint32(1)},
		{"clip.projector_type", "pixtral"},
		{"clip.has_vision_encoder", true},
		{"clip.use_silu", true},
		{"clip.vision.image_size", uint32(imageSize)},
		{"clip.vision.patch_size", uint32(patchSize)},
		{"clip.vision.embedding_length", uint32(visionEmbd)},
		{"clip.vision.feed_forward_length", uint32(visionFFN)},
		{"clip.vision.block_count", uint32(visionBlocks)},
		{"clip.vision.attention.head_count", uint32(visionHeads)},
		{"clip.vision.attention.layer_norm_epsilon", float32(1e-5)},
		{"clip.vision.projection_dim", uint32(embd)},
		{"clip.vision.image_mean", []float32{0.48145466, 0.4578275, 0.40821073}},
		{"clip.vision.image_std", []float32{0.26862954, 0.26130258, 0.27577711}},
	}
	ts := []tensor{
		matrix(rng, "v.patch_embd.weight", 0.02, patchSize, patchSize, 3, visionEmbd),
		ones("v.pre_ln.weight", visionEmbd),
	}
	for b := 0; b < visionBlocks; b++ {
		p := "v.blk." + strconv.Itoa(b) + "."
		ts = append(ts,
			ones(p+"ln1.weight", visionEmbd),
			matrix(rng, p+"attn_q.weight", 0.1, visionEmbd, visionEmbd),
			matrix(rng, p+"attn_k.weight", 0.1, visionEmbd, visionEmbd),
			matrix(rng, p+"attn_v.weight", 0.1, visionEmbd, visionEmbd),
			matrix(rng, p+"attn_out.weight", 0.1, visionEmbd, visionEmbd),
			ones(p+"ln2.weight", visionEmbd),
			matrix(rng, p+"ffn_gate.weight", 0.1, visionEmbd, visionFFN),
			matrix(rng, p+"ffn_up.weight", 0.1, visionEmbd, visionFFN),
			matrix(rng, p+"ffn_down.weight", 0.1, visionFFN, visionEmbd),
		)
	}
	ts = append(ts,
		matrix(rng, "mm.1.weight", 0.1, visionEmbd, embd),
		zeros("mm.1.bias", embd),
		matrix(rng, "mm.2.weight", 0.1, embd, embd),
		zeros("mm.2.bias", embd),
		vector(rng, "v.token_embd.img_break", 0.1, embd),
	)
	return kvs, ts
}
