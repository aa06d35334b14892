package loadgen_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/jpeg"
	"image/png"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/vlmfleet/vlmfleet/agent/imageset"
	"github.com/vlmfleet/vlmfleet/agent/loadgen"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// These tests look at a measurement from the engine's side: the real load
// generator sends the real pictures to an OpenAI-compatible engine that
// decodes everything it is given, and the tests assert what arrived.

// receivedImage is one image as the engine decoded it.
type receivedImage struct {
	w, h int
	// file is the sha256 of the JPEG bytes, pixels that of the decoded planes.
	file, pixels [32]byte
	// thumb is the mean luma of 32×32 blocks below the top rows (where a
	// flat picture's unique copies carry a patch of texture), so that a
	// unique frame can be traced back to the picture it copies.
	thumb []float64
}

// receivedRequest is one request as the engine saw it.
type receivedRequest struct {
	// id numbers requests in arrival order from 1; the engine echoes it as
	// usage.prompt_tokens, which ties it to the load generator's Seq.
	id     int
	combo  protocol.ComboKey
	warmup bool
	images []receivedImage
}

// chatRequest is the part of a chat-completions body the engine reads.
type chatRequest struct {
	Model         *string `json:"model"`
	Stream        *bool   `json:"stream"`
	MaxTokens     *int    `json:"max_tokens"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	Messages []struct {
		Role    string `json:"role"`
		Content []struct {
			Type     string `json:"type"`
			Text     string `json:"text"`
			ImageURL *struct {
				URL string `json:"url"`
			} `json:"image_url"`
		} `json:"content"`
	} `json:"messages"`
}

// measuredAs is a request as the load generator numbered it.
type measuredAs struct {
	combo protocol.ComboKey
	seq   int
}

// decodingEngine is an OpenAI-compatible streaming engine that checks and
// decodes every request fully before it answers, as a real one must.
type decodingEngine struct {
	t         *testing.T
	srv       *httptest.Server
	model     string
	prompt    string
	maxTokens int

	mu     sync.Mutex
	phase  *receivedRequest // combo and warm-up flag of what Measure is running
	got    []receivedRequest
	seqs   map[int]measuredAs // by id, from the Request hook
	hookEr []string
}

func newDecodingEngine(t *testing.T, w protocol.Workload) *decodingEngine {
	e := &decodingEngine{t: t, model: "fake-vlm", prompt: w.Prompt, maxTokens: w.MaxTokens, seqs: map[int]measuredAs{}}
	e.srv = httptest.NewServer(http.HandlerFunc(e.handle))
	t.Cleanup(e.srv.Close)
	return e
}

func (e *decodingEngine) target() loadgen.Target {
	return loadgen.Target{BaseURL: e.srv.URL + "/v1", Model: e.model}
}

// hooks follow Measure: ComboStart says which phase the requests that
// arrive next belong to (a phase starts only after every request of the one
// before has been answered), Request says which Seq an answered id was.
func (e *decodingEngine) hooks() loadgen.Hooks {
	return loadgen.Hooks{
		ComboStart: func(_, _ int, pc protocol.PlannedCombo, warmup bool) {
			e.mu.Lock()
			defer e.mu.Unlock()
			e.phase = &receivedRequest{combo: pc.ComboKey, warmup: warmup}
		},
		Request: func(k protocol.ComboKey, rec protocol.RequestRecord, _ loadgen.Progress) {
			e.mu.Lock()
			defer e.mu.Unlock()
			if rec.Error != "" {
				e.hookEr = append(e.hookEr, fmt.Sprintf("%s seq %d failed: %s", k, rec.Seq, rec.Error))
				return
			}
			if prev, ok := e.seqs[rec.PromptTokens]; ok {
				e.hookEr = append(e.hookEr, fmt.Sprintf("engine request %d reported twice: %s seq %d and %s seq %d",
					rec.PromptTokens, prev.combo, prev.seq, k, rec.Seq))
			}
			e.seqs[rec.PromptTokens] = measuredAs{combo: k, seq: rec.Seq}
		},
	}
}

func (e *decodingEngine) handle(w http.ResponseWriter, r *http.Request) {
	imgs, err := e.read(r)
	if err != nil {
		e.t.Errorf("engine: %v", err)
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	e.mu.Lock()
	if e.phase == nil {
		e.mu.Unlock()
		e.t.Errorf("engine: a request arrived before any ComboStart")
		http.Error(w, "unexpected request", http.StatusBadRequest)
		return
	}
	rr := *e.phase
	rr.id, rr.images = len(e.got)+1, imgs
	e.got = append(e.got, rr)
	e.mu.Unlock()

	// vLLM's shape: a role-only chunk, tokens, the finish, usage with empty
	// choices, [DONE].
	var b strings.Builder
	event := func(data string) { b.WriteString("data: " + data + "\n\n") }
	event(`{"id":"x","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`)
	for _, tok := range []string{"A", " street", "."} {
		event(`{"id":"x","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"` + tok + `"},"finish_reason":null}]}`)
	}
	event(`{"id":"x","object":"chat.completion.chunk","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`)
	event(fmt.Sprintf(`{"id":"x","object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":%d,"completion_tokens":3,"total_tokens":%d}}`, rr.id, rr.id+3))
	event("[DONE]")
	w.Header().Set("Content-Type", "text/event-stream")
	_, _ = io.WriteString(w, b.String())
}

// read checks a request against the method and decodes its images.
func (e *decodingEngine) read(r *http.Request) ([]receivedImage, error) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
		return nil, fmt.Errorf("%s %s, want POST /v1/chat/completions", r.Method, r.URL.Path)
	}
	if ct := r.Header.Get("Content-Type"); ct != "application/json" {
		return nil, fmt.Errorf("Content-Type %q, want application/json", ct)
	}
	dec := json.NewDecoder(r.Body)
	var req chatRequest
	if err := dec.Decode(&req); err != nil {
		return nil, fmt.Errorf("body: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("body: more after the JSON object (%v)", err)
	}
	switch {
	case req.Model == nil || *req.Model != e.model:
		return nil, fmt.Errorf("model %v, want %q", req.Model, e.model)
	case req.Stream == nil || !*req.Stream:
		return nil, errors.New("stream is not true")
	case req.StreamOptions == nil || !req.StreamOptions.IncludeUsage:
		return nil, errors.New("stream_options.include_usage is not true")
	case req.MaxTokens == nil || *req.MaxTokens != e.maxTokens:
		return nil, fmt.Errorf("max_tokens %v, want %d", req.MaxTokens, e.maxTokens)
	case len(req.Messages) != 1 || req.Messages[0].Role != "user":
		return nil, fmt.Errorf("messages %+v, want one user message", req.Messages)
	}
	content := req.Messages[0].Content
	if len(content) < 2 || content[0].Type != "text" || content[0].Text != e.prompt {
		return nil, fmt.Errorf("content must be the text %q then images, starts %+v", e.prompt, content[0])
	}
	var out []receivedImage
	for i, c := range content[1:] {
		if c.Type != "image_url" || c.ImageURL == nil {
			return nil, fmt.Errorf("content[%d] is %q, want image_url", i+1, c.Type)
		}
		img, err := decodeDataURL(c.ImageURL.URL)
		if err != nil {
			return nil, fmt.Errorf("content[%d]: %w", i+1, err)
		}
		out = append(out, img)
	}
	return out, nil
}

// decodeDataURL decodes a base64 JPEG data URL to its last pixel.
func decodeDataURL(u string) (receivedImage, error) {
	const prefix = "data:image/jpeg;base64,"
	if !strings.HasPrefix(u, prefix) {
		return receivedImage{}, fmt.Errorf("image URL %.40q is not a base64 JPEG data URL", u)
	}
	raw, err := base64.StdEncoding.Strict().DecodeString(u[len(prefix):])
	if err != nil {
		return receivedImage{}, fmt.Errorf("base64: %w", err)
	}
	return decodeJPEG(raw)
}

func decodeJPEG(raw []byte) (receivedImage, error) {
	// The decoder stops at the end-of-image marker; nothing may follow it.
	if !bytes.HasPrefix(raw, []byte{0xff, 0xd8}) || !bytes.HasSuffix(raw, []byte{0xff, 0xd9}) {
		return receivedImage{}, errors.New("not a JPEG from SOI to EOI")
	}
	img, err := jpeg.Decode(bytes.NewReader(raw))
	if err != nil {
		return receivedImage{}, fmt.Errorf("JPEG: %w", err)
	}
	b := img.Bounds()
	return receivedImage{w: b.Dx(), h: b.Dy(), file: sha256.Sum256(raw), pixels: pixelDigest(img), thumb: thumbnail(img)}, nil
}

// pixelDigest hashes what a decoder hands a model: equal digests, equal pixels.
func pixelDigest(img image.Image) [32]byte {
	h := sha256.New()
	b := img.Bounds()
	_ = binary.Write(h, binary.LittleEndian, [4]int64{int64(b.Min.X), int64(b.Min.Y), int64(b.Max.X), int64(b.Max.Y)})
	switch m := img.(type) {
	case *image.YCbCr:
		_ = binary.Write(h, binary.LittleEndian, int64(m.SubsampleRatio))
		h.Write(m.Y)
		h.Write(m.Cb)
		h.Write(m.Cr)
	case *image.Gray:
		h.Write(m.Pix)
	default:
		rgba := image.NewRGBA(b)
		draw.Draw(rgba, b, img, b.Min, draw.Src)
		h.Write(rgba.Pix)
	}
	var out [32]byte
	h.Sum(out[:0])
	return out
}

// thumbTop skips the rows where a flat picture's unique copies carry a
// patch of texture.
const (
	thumbTop   = 64
	thumbBlock = 32
)

func thumbnail(img image.Image) []float64 {
	b := img.Bounds()
	m, ok := img.(*image.YCbCr)
	if !ok {
		m = image.NewYCbCr(b, image.YCbCrSubsampleRatio444)
		for y := b.Min.Y; y < b.Max.Y; y++ {
			for x := b.Min.X; x < b.Max.X; x++ {
				m.Y[m.YOffset(x, y)] = color.GrayModel.Convert(img.At(x, y)).(color.Gray).Y
			}
		}
	}
	bw, bh := b.Dx()/thumbBlock, (b.Dy()-thumbTop)/thumbBlock
	sums := make([]int, max(bw*bh, 0))
	for y := range bh * thumbBlock {
		row := m.Y[m.YOffset(b.Min.X, b.Min.Y+thumbTop+y):]
		blocks := sums[y/thumbBlock*bw:][:bw]
		for x, v := range row[:bw*thumbBlock] {
			blocks[x/thumbBlock] += int(v)
		}
	}
	out := make([]float64, len(sums))
	for i, s := range sums {
		out[i] = float64(s) / (thumbBlock * thumbBlock)
	}
	return out
}

// thumbDistance is the mean absolute difference of two thumbnails' blocks.
func thumbDistance(a, b []float64) float64 {
	if len(a) != len(b) || len(a) == 0 {
		return 255
	}
	d := 0.0
	for i := range a {
		if v := a[i] - b[i]; v < 0 {
			d -= v
		} else {
			d += v
		}
	}
	return d / float64(len(a))
}

// measured is one combination as the engine received it.
type measured struct {
	c    protocol.Combination
	warm []receivedRequest
	// reqs is indexed by the load generator's Seq.
	reqs []receivedRequest
}

// measure runs w through the real load generator against a decoding
// engine and sorts what the engine received by combination and Seq.
func measure(t *testing.T, w protocol.Workload, imgs loadgen.Images) []measured {
	t.Helper()
	if err := w.Validate(); err != nil {
		t.Fatal(err)
	}
	e := newDecodingEngine(t, w)
	combos, err := loadgen.Measure(context.Background(), e.target(), w, imgs, e.hooks())
	if err != nil {
		t.Fatalf("Measure: %v", err)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, s := range e.hookEr {
		t.Error(s)
	}
	plan := w.Plan()
	if len(combos) != len(plan) {
		t.Fatalf("%d combinations measured, want %d", len(combos), len(plan))
	}
	out := make([]measured, len(plan))
	index := map[protocol.ComboKey]int{}
	for i, pc := range plan {
		c := combos[i]
		if c.ComboKey != pc.ComboKey || c.Completed != pc.Requests || c.Failed != 0 || c.Warmup != w.WarmupRequests*pc.Cameras {
			t.Fatalf("combination %d: %s completed %d failed %d warm-up %d, want %s %d 0 %d",
				i, c.ComboKey, c.Completed, c.Failed, c.Warmup, pc.ComboKey, pc.Requests, w.WarmupRequests*pc.Cameras)
		}
		out[i] = measured{c: c, reqs: make([]receivedRequest, pc.Requests)}
		index[pc.ComboKey] = i
	}
	for _, rr := range e.got {
		i, ok := index[rr.combo]
		if !ok {
			t.Fatalf("engine request %d during unplanned %s", rr.id, rr.combo)
		}
		m := &out[i]
		if rr.warmup {
			m.warm = append(m.warm, rr)
			continue
		}
		as, ok := e.seqs[rr.id]
		if !ok || as.combo != rr.combo || as.seq < 0 || as.seq >= len(m.reqs) {
			t.Fatalf("engine request %d of %s: the load generator reported it as %+v (found %v)", rr.id, rr.combo, as, ok)
		}
		if m.reqs[as.seq].id != 0 {
			t.Fatalf("%s seq %d arrived twice (engine requests %d and %d)", rr.combo, as.seq, m.reqs[as.seq].id, rr.id)
		}
		m.reqs[as.seq] = rr
	}
	for _, m := range out {
		if len(m.warm) != m.c.Warmup {
			t.Errorf("%s: engine saw %d warm-up requests, want %d", m.c.ComboKey, len(m.warm), m.c.Warmup)
		}
		for seq, rr := range m.reqs {
			if rr.id == 0 {
				t.Errorf("%s seq %d never reached the engine", m.c.ComboKey, seq)
			}
		}
		size, err := protocol.LookupImageSize(m.c.Size)
		if err != nil {
			t.Fatal(err)
		}
		for _, rr := range slices.Concat(m.warm, m.reqs) {
			if len(rr.images) != m.c.Images {
				t.Errorf("%s: engine request %d carries %d images, want %d", m.c.ComboKey, rr.id, len(rr.images), m.c.Images)
			}
			for k, img := range rr.images {
				if img.w != size.Width || img.h != size.Height {
					t.Errorf("%s: engine request %d image %d is %d×%d, want %d×%d",
						m.c.ComboKey, rr.id, k, img.w, img.h, size.Width, size.Height)
				}
			}
		}
	}
	if t.Failed() {
		t.FailNow()
	}
	return out
}

// plainPictures knows a set's plain pictures at each size, by JPEG bytes and
// by decoded pixels.
type plainPictures struct {
	set    *imageset.Set
	byFile map[string]map[[32]byte]int
	// decoded holds pictures the engine received in plain mode or that were
	// decoded here, by size and index.
	decoded map[string]map[int]receivedImage
}

func newPlainPictures(set *imageset.Set) *plainPictures {
	return &plainPictures{set: set, byFile: map[string]map[[32]byte]int{}, decoded: map[string]map[int]receivedImage{}}
}

// index returns which plain picture at size has exactly these JPEG bytes.
func (p *plainPictures) index(t *testing.T, size string, img receivedImage) (int, bool) {
	t.Helper()
	files, ok := p.byFile[size]
	if !ok {
		files = map[[32]byte]int{}
		for i := range p.set.Len() {
			b, err := p.set.JPEG(size, i)
			if err != nil {
				t.Fatal(err)
			}
			files[sha256.Sum256(b)] = i
		}
		p.byFile[size] = files
	}
	i, ok := files[img.file]
	return i, ok
}

// remember keeps a received plain picture's decoded pixels.
func (p *plainPictures) remember(size string, i int, img receivedImage) {
	if p.decoded[size] == nil {
		p.decoded[size] = map[int]receivedImage{}
	}
	p.decoded[size][i] = img
}

// get returns plain picture i at size, decoding it if no request carried it.
func (p *plainPictures) get(t *testing.T, size string, i int) receivedImage {
	t.Helper()
	if img, ok := p.decoded[size][i]; ok {
		return img
	}
	b, err := p.set.JPEG(size, i)
	if err != nil {
		t.Fatal(err)
	}
	img, err := decodeJPEG(b)
	if err != nil {
		t.Fatalf("plain %s picture %d: %v", size, i, err)
	}
	p.remember(size, i, img)
	return img
}

// sizesFor returns the sizes a test sends: all it asks for, or only the
// smallest under the race detector, which makes JPEG work about ten times
// slower (the loop's concurrency is the same at every size).
func sizesFor(t *testing.T, sizes ...string) []string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "-race" && s.Value == "true" {
				t.Logf("race detector on: %s only, not %v", sizes[0], sizes)
				return sizes[:1]
			}
		}
	}
	return sizes
}

// warmupPicture is the picture of image k of warm-up request wi, as the load
// generator documents it: the warm-up's warm requests of n images take the
// end of the cycle of setLen pictures, ending just before picture 0 where
// the measurement starts.
func warmupPicture(setLen, n, warm, wi, k int) int {
	return (setLen - (warm*n)%setLen + wi*n + k) % setLen
}

// TestEngineReceivesBuiltinPictures sends the builtin sixteen at every size
// and asserts what the engine receives, in plain and in unique mode.
func TestEngineReceivesBuiltinPictures(t *testing.T) {
	set, err := imageset.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	if set.Len() != 16 {
		t.Fatalf("the builtin set has %d pictures, want 16", set.Len())
	}
	plain := newPlainPictures(set)
	allSizes := sizesFor(t, "480p", "720p", "1080p", "2K")

	t.Run("plain: the sixteen-picture cycle", func(t *testing.T) { checkPlainCycle(t, plain, set, allSizes) })
	// Stamping a frame is a decode and an encode on the client: the
	// smallest and the largest size suffice for unique mode.
	uniqueSizes := []string{allSizes[0], allSizes[len(allSizes)-1]}
	t.Run("unique: no frame twice, none plain", func(t *testing.T) { checkUnique(t, plain, set, slices.Compact(uniqueSizes)) })
}

// checkPlainCycle sends imgs in plain mode and asserts that the engine
// received plain's pictures in the order of the sixteen-picture cycle.
func checkPlainCycle(t *testing.T, plain *plainPictures, imgs loadgen.Images, allSizes []string) {
	// 20 requests at one camera wrap round the sixteen; the other
	// combinations are short, because 2K frames are slow to decode.
	w := protocol.Workload{
		Prompt: protocol.DefaultPrompt, MaxTokens: 128,
		Sizes: []string{"480p"}, Cameras: []int{1, 3}, RequestsPerLevel: 20,
		MultiImageSizes: allSizes, ImagesPerRequest: []int{1, 3}, MultiImageRequests: 2,
		WarmupRequests: 1, RequestTimeoutSec: 30,
	}
	got := measure(t, w, imgs)
	for _, m := range got {
		n := m.c.Images
		// Request r carries pictures (r*n+k) mod 16: the measurement
		// starts at picture 0 and the warm-up takes the end of the
		// cycle, ending just before it.
		for seq, rr := range m.reqs {
			for k, img := range rr.images {
				want := (seq*n + k) % 16
				i, ok := plain.index(t, m.c.Size, img)
				if !ok || i != want {
					t.Errorf("%s seq %d image %d is builtin picture %d (found %v), want %d", m.c.ComboKey, seq, k, i, ok, want)
				}
				plain.remember(m.c.Size, want, img)
			}
		}
		// Several cameras answer the warm-up in any order: compare it
		// as a multiset with warm-up requests 0..Warmup-1.
		var gotWarm, wantWarm []string
		for wi, rr := range m.warm {
			var g, x []int
			for k, img := range rr.images {
				i, _ := plain.index(t, m.c.Size, img)
				g = append(g, i)
				x = append(x, warmupPicture(16, n, len(m.warm), wi, k))
			}
			gotWarm, wantWarm = append(gotWarm, fmt.Sprint(g)), append(wantWarm, fmt.Sprint(x))
		}
		slices.Sort(gotWarm)
		slices.Sort(wantWarm)
		if !slices.Equal(gotWarm, wantWarm) {
			t.Errorf("%s warm-up carried pictures %v, want %v", m.c.ComboKey, gotWarm, wantWarm)
		}
	}

	// The cycle from the pixels alone: at 480p, one image, one camera,
	// requests 0..15 carry sixteen different pictures and 16..19 repeat
	// 0..3.
	cycle := got[0]
	if cycle.c.ComboKey != (protocol.ComboKey{Size: "480p", Images: 1, Cameras: 1}) || len(cycle.reqs) != 20 {
		t.Fatalf("first combination is %s with %d requests", cycle.c.ComboKey, len(cycle.reqs))
	}
	first := map[[32]byte]int{}
	for seq, rr := range cycle.reqs {
		px := rr.images[0].pixels
		if seq < 16 {
			if prev, ok := first[px]; ok {
				t.Errorf("480p requests %d and %d carry the same pixels within one cycle", prev, seq)
			}
			first[px] = seq
		} else if px != cycle.reqs[seq-16].images[0].pixels {
			t.Errorf("480p request %d does not repeat request %d's picture", seq, seq-16)
		}
	}
	if len(first) != 16 {
		t.Errorf("%d distinct pictures in the 480p cycle, want 16", len(first))
	}
}

// checkUnique sends imgs in unique mode and asserts that no frame reached
// the engine twice or as one of plain's pictures, and that frames still
// follow the cycle.
func checkUnique(t *testing.T, plain *plainPictures, imgs loadgen.Images, sizes []string) {
	w := protocol.Workload{
		Prompt: protocol.DefaultPrompt, MaxTokens: 128,
		Sizes: []string{"480p"}, Cameras: []int{1, 2}, RequestsPerLevel: 4,
		MultiImageSizes: sizes, ImagesPerRequest: []int{3}, MultiImageRequests: 1,
		WarmupRequests: 1, RequestTimeoutSec: 30, UniqueImages: protocol.Set(true),
	}
	got := measure(t, w, imgs)
	// No two frames of the run at one size share pixels: each
	// combination draws a fresh seed, so this holds across them too.
	seen := map[[32]byte]string{}
	for _, m := range got {
		n := m.c.Images
		for _, rr := range slices.Concat(m.warm, m.reqs) {
			for k, img := range rr.images {
				where := fmt.Sprintf("%s engine request %d image %d", m.c.ComboKey, rr.id, k)
				if prev, ok := seen[img.pixels]; ok {
					t.Errorf("%s has the pixels of %s", where, prev)
				}
				seen[img.pixels] = where
				if i, ok := plain.index(t, m.c.Size, img); ok {
					t.Errorf("%s is plain builtin picture %d", where, i)
				}
			}
		}
		// Frame k of request r is a stamped copy of picture (r*n+k) mod
		// 16: below the stamp it looks like that picture and no other
		// known one, and its pixels are not that picture's.
		for seq, rr := range m.reqs {
			for k, img := range rr.images {
				want := (seq*n + k) % 16
				src := plain.get(t, m.c.Size, want)
				if img.pixels == src.pixels {
					t.Errorf("%s seq %d image %d has plain picture %d's pixels", m.c.ComboKey, seq, k, want)
				}
				d := thumbDistance(img.thumb, src.thumb)
				if d > 2 {
					t.Errorf("%s seq %d image %d differs from picture %d by %.2f below the stamp, want at most 2", m.c.ComboKey, seq, k, want, d)
				}
				for i, other := range plain.decoded[m.c.Size] {
					if i != want && thumbDistance(img.thumb, other.thumb) <= d {
						t.Errorf("%s seq %d image %d looks as much like picture %d as like %d", m.c.ComboKey, seq, k, i, want)
					}
				}
			}
		}
	}
}

// TestEngineReceivesSnapshotDirectory sends a user's snapshots of odd sizes:
// they arrive at exactly the frame size, cycling with the set's period.
func TestEngineReceivesSnapshotDirectory(t *testing.T) {
	dir := t.TempDir()
	for i, sz := range []image.Point{{1000, 700}, {640, 900}, {1001, 333}} {
		img := image.NewRGBA(image.Rect(0, 0, sz.X, sz.Y))
		for y := range sz.Y {
			for x := range sz.X {
				v := uint8((x*(i+1) + y*(3-i)) / 8)
				copy(img.Pix[img.PixOffset(x, y):], []uint8{v, uint8(60 * i), 255 - v, 255})
			}
		}
		var b bytes.Buffer
		if err := png.Encode(&b, img); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("cam%d.png", i)), b.Bytes(), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	set, err := imageset.FromDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	sizes := sizesFor(t, "480p", "720p")
	w := protocol.Workload{
		Prompt: "What changed?", MaxTokens: 32,
		Sizes: sizes[len(sizes)-1:], Cameras: []int{1}, RequestsPerLevel: 7,
		MultiImageSizes: []string{"480p"}, ImagesPerRequest: []int{2}, MultiImageRequests: 4,
		WarmupRequests: 1, RequestTimeoutSec: 30,
	}
	plain := newPlainPictures(set)
	for _, m := range measure(t, w, set) {
		var pixels [][32]byte // in the order the load generator numbered them
		for seq, rr := range m.reqs {
			for k, img := range rr.images {
				want := (seq*m.c.Images + k) % 3
				if i, ok := plain.index(t, m.c.Size, img); !ok || i != want {
					t.Errorf("%s seq %d image %d is snapshot %d (found %v), want %d", m.c.ComboKey, seq, k, i, ok, want)
				}
				pixels = append(pixels, img.pixels)
			}
		}
		for wi, rr := range m.warm { // one camera: in the order sent
			for k, img := range rr.images {
				want := warmupPicture(3, m.c.Images, len(m.warm), wi, k)
				if i, ok := plain.index(t, m.c.Size, img); !ok || i != want {
					t.Errorf("%s warm-up %d image %d is snapshot %d (found %v), want %d", m.c.ComboKey, wi, k, i, ok, want)
				}
			}
		}
		for j := range pixels {
			if j >= 3 && pixels[j] != pixels[j-3] {
				t.Errorf("%s: image %d of the run is not image %d again", m.c.ComboKey, j, j-3)
			}
			for i := j - 1; i >= 0 && i > j-3; i-- {
				if pixels[i] == pixels[j] {
					t.Errorf("%s: images %d and %d have the same pixels within one cycle of 3", m.c.ComboKey, i, j)
				}
			}
		}
	}
}
