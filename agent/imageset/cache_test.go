package imageset

import (
	"image"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/vlmfleet/vlmfleet/protocol"
)

// countDrawing makes s count the pictures it draws.
func countDrawing(s *Set) *atomic.Int64 {
	var n atomic.Int64
	src := s.source
	s.source = func(i, w, h int) (*image.RGBA, error) {
		n.Add(1)
		return src(i, w, h)
	}
	return &n
}

func TestBuiltinCached(t *testing.T) {
	dir := t.TempDir()
	first, err := BuiltinCached(dir)
	if err != nil {
		t.Fatal(err)
	}
	drawn := countDrawing(first)
	var want []string
	for i := range first.Len() {
		want = append(want, mustURL(t, first, "480p", i))
	}
	if drawn.Load() != 16 {
		t.Fatalf("an empty cache drew %d pictures, want 16", drawn.Load())
	}
	if first.Hash() != builtinHash {
		t.Fatalf("hash %s, want %s", first.Hash(), builtinHash)
	}

	// A second start reads everything back, the hash included, and draws nothing.
	second, err := BuiltinCached(dir)
	if err != nil {
		t.Fatal(err)
	}
	drawn = countDrawing(second)
	for i := range second.Len() {
		if mustURL(t, second, "480p", i) != want[i] {
			t.Fatalf("picture %d read back differs from the one drawn", i)
		}
	}
	if second.Hash() != builtinHash || drawn.Load() != 0 {
		t.Fatalf("second start: hash %s, %d pictures drawn; want %s and none", second.Hash(), drawn.Load(), builtinHash)
	}

	// Damaged files are drawn again and replaced: cut short (a copy
	// interrupted), one byte changed, something else entirely, and a whole
	// JPEG of another size.
	pic := func(i int) string { return filepath.Join(dir, BuiltinName+"-"+drawingVersion, pictureName("480p", i)) }
	b, err := os.ReadFile(pic(0))
	if err != nil {
		t.Fatal(err)
	}
	other, err := os.ReadFile(filepath.Join(dir, BuiltinName+"-"+drawingVersion, "hash"))
	if err != nil {
		t.Fatal(err)
	}
	flipped := append([]byte(nil), b...)
	flipped[len(flipped)-100] ^= 0x40
	small, err := encodeJPEG(render(scenes()[3], 64, 36).image())
	if err != nil {
		t.Fatal(err)
	}
	framed := filepath.Join(t.TempDir(), "c")
	(&diskCache{dir: framed}).write("x", small)
	wrongSize, err := os.ReadFile(filepath.Join(framed, "x"))
	if err != nil {
		t.Fatal(err)
	}
	damage := map[int][]byte{0: b[:len(b)/2], 1: flipped, 2: []byte("not a picture"), 3: other, 4: wrongSize}
	for i, content := range damage {
		if err := os.WriteFile(pic(i), content, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	third, err := BuiltinCached(dir)
	if err != nil {
		t.Fatal(err)
	}
	drawn = countDrawing(third)
	for i := range third.Len() {
		if mustURL(t, third, "480p", i) != want[i] {
			t.Errorf("picture %d after damage differs from the one drawn", i)
		}
	}
	if drawn.Load() != int64(len(damage)) {
		t.Errorf("%d pictures drawn again, want the %d damaged ones", drawn.Load(), len(damage))
	}
	for i := range damage {
		if _, err := third.cache.picture(mustSize(t, "480p"), i); err != nil {
			t.Errorf("damaged picture %d not replaced: %v", i, err)
		}
	}
}

// A cache that cannot be written costs the drawing, nothing else.
func TestBuiltinCacheUnwritable(t *testing.T) {
	blocker := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(blocker, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := BuiltinCached(filepath.Join(blocker, "pictures"))
	if err != nil {
		t.Fatal(err)
	}
	if u := mustURL(t, s, "480p", 5); !strings.HasPrefix(u, dataURLPrefix) {
		t.Fatalf("picture 5: %.40s", u)
	}
	if s.Hash() != builtinHash {
		t.Errorf("hash %s", s.Hash())
	}
}

func TestDrawingVersionIsTheHash(t *testing.T) {
	if !strings.HasPrefix(builtinHash, drawingVersion) {
		t.Errorf("drawingVersion %s is not the start of the builtin hash %s: update it with the hash", drawingVersion, builtinHash)
	}
}

func TestCacheDir(t *testing.T) {
	env := func(kv ...string) func(string) string {
		m := map[string]string{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return func(k string) string { return m[k] }
	}
	for _, c := range []struct {
		env  func(string) string
		want string
	}{
		{env("XDG_CACHE_HOME", "/x", "HOME", "/h"), "/x/vlmfleet/pictures"},
		{env("XDG_CACHE_HOME", "rel", "HOME", "/h"), "/h/.cache/vlmfleet/pictures"},
		{env("HOME", "/h"), "/h/.cache/vlmfleet/pictures"},
		{env(), ""},
	} {
		if got := CacheDir(c.env); got != c.want {
			t.Errorf("CacheDir = %q, want %q", got, c.want)
		}
	}
}

func mustSize(t testing.TB, name string) protocol.ImageSize {
	t.Helper()
	sz, err := protocol.LookupImageSize(name)
	if err != nil {
		t.Fatal(err)
	}
	return sz
}

// Drawing is bounded by memory, not by the number of CPUs: a twelve-core
// Jetson must not hold twelve 2K canvases at once.
func TestDrawersBounded(t *testing.T) {
	for _, sz := range protocol.ImageSizes() {
		n := drawers(sz)
		if n < 1 || n*4*sz.Width*sz.Height > drawBudget && n > 1 {
			t.Errorf("%s: %d drawn at once, over the %d MB budget", sz.Name, n, drawBudget>>20)
		}
	}
	if n := drawers(mustSize(t, "2K")); n != 2 {
		t.Errorf("2K: %d drawn at once, want 2", n)
	}
}

// BenchmarkBuiltinCachedWarm is a second start: the sixteen pictures at
// every size read back from a cache the first start filled.
func BenchmarkBuiltinCachedWarm(b *testing.B) {
	dir := b.TempDir()
	prepare := func() {
		s, err := BuiltinCached(dir)
		if err != nil {
			b.Fatal(err)
		}
		for _, sz := range protocol.ImageSizes() {
			if _, err := s.DataURL(sz.Name, 0); err != nil {
				b.Fatal(err)
			}
		}
		if s.Hash() != builtinHash {
			b.Fatalf("hash %s", s.Hash())
		}
	}
	prepare()
	b.ResetTimer()
	for range b.N {
		prepare()
	}
}
