package imageset

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vlmfleet/vlmfleet/protocol"
)

func decodeURL(t testing.TB, url string) image.Image {
	t.Helper()
	b64, ok := strings.CutPrefix(url, "data:image/jpeg;base64,")
	if !ok {
		t.Fatalf("data URL starts %.40q", url)
	}
	b, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		t.Fatal(err)
	}
	img, err := jpeg.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("not a JPEG: %v", err)
	}
	return img
}

// meanDiff is the mean absolute difference of two decoded JPEGs' luma.
func meanDiff(a, b image.Image) float64 {
	ya, yb := a.(*image.YCbCr).Y, b.(*image.YCbCr).Y
	var d int64
	for k := range ya {
		v := int64(ya[k]) - int64(yb[k])
		if v < 0 {
			v = -v
		}
		d += v
	}
	return float64(d) / float64(len(ya))
}

// TestBuiltin checks the builtin sixteen through one set, so that each
// size is drawn and encoded once for all its checks.
func TestBuiltin(t *testing.T) {
	s, err := Builtin()
	if err != nil {
		t.Fatal(err)
	}
	if s.Len() != 16 || s.Name() != "builtin" {
		t.Fatalf("Len %d Name %q", s.Len(), s.Name())
	}
	t.Run("480p: exact size, sixteen distinct pictures", func(t *testing.T) {
		var imgs []image.Image
		for i := range s.Len() {
			img := decodeURL(t, mustURL(t, s, "480p", i))
			if b := img.Bounds(); b.Dx() != 854 || b.Dy() != 480 {
				t.Fatalf("picture %d is %v, want 854x480", i, b)
			}
			imgs = append(imgs, img)
		}
		for i := range imgs {
			for j := i + 1; j < len(imgs); j++ {
				if d := meanDiff(imgs[i], imgs[j]); d < 8 {
					t.Errorf("pictures %d and %d differ by only %.1f per channel", i, j, d)
				}
			}
		}
	})
	t.Run("larger sizes: exact size", func(t *testing.T) {
		// One scene each: the whole set at every size goes through the
		// same code, and FromDir's test goes through every size's cache.
		for _, sz := range protocol.ImageSizes()[1:] {
			b, err := encodeJPEG(render(scenes()[3], sz.Width, sz.Height).image())
			if err != nil {
				t.Fatal(err)
			}
			cfg, err := jpeg.DecodeConfig(bytes.NewReader(b))
			if err != nil || cfg.Width != sz.Width || cfg.Height != sz.Height {
				t.Errorf("%s: %+v %v", sz.Name, cfg, err)
			}
		}
	})
	t.Run("cycle and errors", func(t *testing.T) {
		if mustURL(t, s, "480p", -1) != mustURL(t, s, "480p", 15) {
			t.Error("picture -1 is not picture 15")
		}
		if mustURL(t, s, "480p", 17) != mustURL(t, s, "480p", 1) {
			t.Error("picture 17 is not picture 1")
		}
		if _, err := s.DataURL("4K", 0); err == nil || !strings.Contains(err.Error(), "720p") {
			t.Errorf("unknown size: %v", err)
		}
		j, err := s.JPEG("480p", 2)
		if err != nil || mustURL(t, s, "480p", 2) != dataURL(j) {
			t.Errorf("JPEG and DataURL disagree: %v", err)
		}
	})
	t.Run("hash stable", func(t *testing.T) {
		fresh, _ := Builtin() // draws for the hash, where s kept its digests
		if s.Hash() != fresh.Hash() || len(s.Hash()) != 64 {
			t.Fatalf("hash %q then %q", s.Hash(), fresh.Hash())
		}
		if s.Hash() != builtinHash {
			t.Errorf("builtin hash %s, want %s: the pictures changed", s.Hash(), builtinHash)
		}
	})
	t.Run("unique", func(t *testing.T) {
		var imgs []image.Image
		for k := range 4 {
			u, err := s.UniqueDataURL("480p", 14+k, 7) // wraps round the cycle
			if err != nil {
				t.Fatal(err)
			}
			img := decodeURL(t, u)
			if b := img.Bounds(); b.Dx() != 854 || b.Dy() != 480 {
				t.Fatalf("unique %d is %v", k, b)
			}
			if pixelsEqual(img, decodeURL(t, mustURL(t, s, "480p", 14+k))) {
				t.Errorf("unique %d has the plain picture's pixels", k)
			}
			imgs = append(imgs, img)
		}
		allDistinct(t, imgs)
	})
}

// builtinHash is the hash of the builtin sixteen. It changes only when the
// scenes are redrawn on purpose; then update it (and say so in the change).
const builtinHash = "5b66655170e4726a5464794245c60245037d903d9fd8e983cb17cef0d2a7809e"

func TestUniqueOnePicture(t *testing.T) {
	// One flat picture only: its tables alone could not tell the frames
	// apart, so it gets a patch of texture first.
	dir := t.TempDir()
	writePNG(t, filepath.Join(dir, "a.png"), 320, 180, func(x, y int) color.Color { return color.Gray{128} })
	one, err := FromDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var imgs []image.Image
	for k := range 3 {
		u, err := one.UniqueDataURL("480p", k, 1<<40)
		if err != nil {
			t.Fatal(err)
		}
		imgs = append(imgs, decodeURL(t, u))
	}
	imgs = append(imgs, decodeURL(t, mustURL(t, one, "480p", 0)))
	allDistinct(t, imgs)
}

// Every picture a run of unique pictures sends decodes, with Go's decoder,
// to pixels no other picture of the run has, and none to a plain
// picture's: at 480p a run of 64 cameras × 6 requests over two phases, at
// 2K two phases of 64. The proof compares decoded pixels (by hash), not
// the method's codes.
func TestUniquePicturesOfARunDecodeApart(t *testing.T) {
	s, err := Builtin()
	if err != nil {
		t.Fatal(err)
	}
	for size, perPhase := range map[string]int{"480p": 64 * 6, "2K": 64} {
		seen := map[[32]byte]string{}
		add := func(what, url string) {
			img := decodeURL(t, url).(*image.YCbCr)
			h := sha256.New()
			h.Write(img.Y)
			h.Write(img.Cb)
			h.Write(img.Cr)
			var sum [32]byte
			h.Sum(sum[:0])
			if other, dup := seen[sum]; dup {
				t.Fatalf("%s %s decodes to the pixels of %s", size, what, other)
			}
			seen[sum] = what
		}
		for i := range s.Len() {
			add(fmt.Sprintf("plain picture %d", i), mustURL(t, s, size, i))
		}
		for _, seed := range []uint64{1, 0xdeadbeef} {
			for i := range perPhase {
				u, err := s.UniqueDataURL(size, i, seed)
				if err != nil {
					t.Fatal(err)
				}
				add(fmt.Sprintf("unique picture %d of seed %d", i, seed), u)
			}
		}
	}
}

// A unique picture costs a copy: it is the plain picture's data URL with
// the bytes of the quantization tables alone changed.
func TestUniquePictureIsACopyWithOtherTables(t *testing.T) {
	s, err := Builtin()
	if err != nil {
		t.Fatal(err)
	}
	plain, err := s.JPEG("720p", 3)
	if err != nil {
		t.Fatal(err)
	}
	u, err := s.UniqueDataURL("720p", 3, 42)
	if err != nil {
		t.Fatal(err)
	}
	got, err := jpegOf(u)
	if err != nil || len(got) != len(plain) {
		t.Fatalf("unique picture: %d bytes, plain %d, %v", len(got), len(plain), err)
	}
	l, err := readLayout(plain, len(plain))
	if err != nil {
		t.Fatal(err)
	}
	changed := 0
	for i := range plain {
		if plain[i] != got[i] {
			changed++
			if i >= l.tablesEnd {
				t.Fatalf("byte %d past the tables (which end at %d) changed", i, l.tablesEnd)
			}
		}
	}
	if changed < 8 {
		t.Fatalf("%d table entries changed, want about half of 64", changed)
	}
}

func allDistinct(t *testing.T, imgs []image.Image) {
	t.Helper()
	for i := range imgs {
		for j := i + 1; j < len(imgs); j++ {
			if pixelsEqual(imgs[i], imgs[j]) {
				t.Errorf("frames %d and %d have the same pixels", i, j)
			}
		}
	}
}

// pixelsEqual compares two decoded JPEGs plane by plane.
func pixelsEqual(a, b image.Image) bool {
	ya, yb := a.(*image.YCbCr), b.(*image.YCbCr)
	return ya.Rect == yb.Rect && bytes.Equal(ya.Y, yb.Y) && bytes.Equal(ya.Cb, yb.Cb) && bytes.Equal(ya.Cr, yb.Cr)
}

func writePNG(t testing.TB, path string, w, h int, at func(x, y int) color.Color) {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			img.Set(x, y, at(x, y))
		}
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestFromDir(t *testing.T) {
	dir := t.TempDir()
	green := color.RGBA{0, 200, 0, 255}
	// 4:3 with green bands at top and bottom that a 16:9 crop removes; a
	// squashing scaler would keep them.
	writePNG(t, filepath.Join(dir, "b.png"), 800, 600, func(x, y int) color.Color {
		if y < 70 || y >= 530 {
			return green
		}
		return color.RGBA{120, 120, 120, 255}
	})
	wide := image.NewRGBA(image.Rect(0, 0, 2000, 600))
	var jb bytes.Buffer
	_ = jpeg.Encode(&jb, wide, nil)
	if err := os.WriteFile(filepath.Join(dir, "a.JPG"), jb.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	_ = os.WriteFile(filepath.Join(dir, "README.txt"), []byte("not a picture"), 0o644)
	s, err := FromDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if s.Len() != 2 || s.Name() != dir {
		t.Fatalf("Len %d Name %q", s.Len(), s.Name())
	}
	s2, _ := FromDir(dir)
	if s.Hash() != s2.Hash() || s.Hash() == builtinHash || len(s.Hash()) != 64 {
		t.Errorf("hash %q then %q", s.Hash(), s2.Hash())
	}
	for _, size := range []string{"480p", "720p"} {
		for i := range 2 {
			img := decodeURL(t, mustURL(t, s, size, i))
			if sz, _ := protocol.LookupImageSize(size); img.Bounds().Dx() != sz.Width || img.Bounds().Dy() != sz.Height {
				t.Fatalf("%s picture %d: %v", size, i, img.Bounds())
			}
		}
	}
	// Every size, on a set of one small picture.
	small := t.TempDir()
	writePNG(t, filepath.Join(small, "s.png"), 64, 48, func(x, y int) color.Color { return color.RGBA{uint8(x * 4), uint8(y * 5), 60, 255} })
	one, err := FromDir(small)
	if err != nil {
		t.Fatal(err)
	}
	for _, sz := range protocol.ImageSizes() {
		j, err := one.JPEG(sz.Name, 0)
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := jpeg.DecodeConfig(bytes.NewReader(j))
		if err != nil || cfg.Width != sz.Width || cfg.Height != sz.Height {
			t.Errorf("%s: %+v %v", sz.Name, cfg, err)
		}
	}
	// Sorted by name: a.JPG (black) first, then b.png, cropped not squashed.
	img := decodeURL(t, mustURL(t, s, "720p", 1))
	for _, y := range []int{2, 360, 717} {
		r, g, _, _ := img.At(640, y).RGBA()
		if g>>8 > r>>8+40 {
			t.Errorf("row %d of b.png at 720p is green: the 4:3 picture was squashed, not cropped", y)
		}
	}
	if r, g, bl, _ := decodeURL(t, mustURL(t, s, "480p", 0)).At(400, 240).RGBA(); r>>8 > 20 || g>>8 > 20 || bl>>8 > 20 {
		t.Error("picture 0 is not a.JPG")
	}
}

func TestFromDirErrors(t *testing.T) {
	dir := t.TempDir()
	writePNG(t, filepath.Join(dir, "good.png"), 16, 9, func(x, y int) color.Color { return color.White })
	_ = os.WriteFile(filepath.Join(dir, "bad.jpg"), []byte("\xff\xd8 not really"), 0o644)
	if _, err := FromDir(dir); err == nil || !strings.Contains(err.Error(), "bad.jpg") {
		t.Errorf("bad file: %v", err)
	}
	empty := t.TempDir()
	if _, err := FromDir(empty); err == nil || !strings.Contains(err.Error(), "no pictures") {
		t.Errorf("empty dir: %v", err)
	}
	if _, err := FromDir(filepath.Join(empty, "missing")); err == nil {
		t.Error("missing dir: no error")
	}
}

func FuzzFromDir(f *testing.F) {
	var b bytes.Buffer
	_ = png.Encode(&b, image.NewGray(image.Rect(0, 0, 3, 2)))
	f.Add(b.Bytes())
	b.Reset()
	_ = jpeg.Encode(&b, image.NewGray(image.Rect(0, 0, 9, 16)), nil)
	f.Add(b.Bytes())
	f.Add([]byte("\x89PNG\r\n\x1a\n"))
	f.Add([]byte{0xff, 0xd8, 0xff, 0xdb})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 1<<16 {
			return
		}
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "x.png"), data, 0o644); err != nil {
			t.Fatal(err)
		}
		s, err := FromDir(dir)
		if err != nil {
			if !strings.Contains(err.Error(), "x.png") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		if cfg, _, err := image.DecodeConfig(bytes.NewReader(data)); err != nil || cfg.Width*cfg.Height > 1<<20 {
			return // a huge picture would only slow the fuzzer down
		}
		if _, err := s.DataURL("480p", 0); err != nil {
			t.Fatal(err)
		}
	})
}

func BenchmarkDataURLCached(b *testing.B) {
	s, _ := Builtin()
	if _, err := s.DataURL("720p", 0); err != nil {
		b.Fatal(err)
	}
	i := 0
	for b.Loop() {
		if _, err := s.DataURL("720p", i); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// BenchmarkEncode2K is one builtin picture drawn and encoded at 2K.
func BenchmarkEncode2K(b *testing.B) {
	for b.Loop() {
		if _, err := encodeJPEG(render(scenes()[0], 2560, 1440).image()); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkBuiltinFirstUse is the cost of a size's first use: all sixteen
// drawn and encoded, on every CPU.
func BenchmarkBuiltinFirstUse(b *testing.B) {
	for _, size := range []string{"480p", "720p", "1080p", "2K"} {
		b.Run(size, func(b *testing.B) {
			for b.Loop() {
				s, _ := Builtin()
				if _, err := s.DataURL(size, 0); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkRenderAll2K is the drawing alone, all sixteen at 2K on one core.
func BenchmarkRenderAll2K(b *testing.B) {
	for b.Loop() {
		for _, sc := range scenes() {
			render(sc, 2560, 1440)
		}
	}
}

func BenchmarkUnique720p(b *testing.B) {
	s, _ := Builtin()
	if _, err := s.DataURL("720p", 0); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, _, err := s.UniquePicture("720p", 0, 9); err != nil {
			b.Fatal(err)
		}
	}
}

func mustURL(t testing.TB, s *Set, size string, i int) string {
	t.Helper()
	u, err := s.DataURL(size, i)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// readLayout reads the first bytes of pictures from a user's directory
// (re-encoded, but the walk must hold on anything): it never panics, and
// every offset it gives is inside the bytes it read.
func FuzzReadLayout(f *testing.F) {
	s, err := Builtin()
	if err != nil {
		f.Fatal(err)
	}
	j, err := s.JPEG("480p", 0)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(j[:600], len(j))
	f.Add([]byte{0xFF, 0xD8, 0xFF, 0xDB, 0x00, 0x02, 0xFF, 0xDA, 0x00, 0x02}, 10)
	f.Fuzz(func(t *testing.T, b []byte, total int) {
		total = max(total, len(b))
		l, err := readLayout(b, total)
		if err != nil {
			return
		}
		for _, off := range l.entries {
			if off < 0 || off >= l.tablesEnd || l.tablesEnd > len(b) {
				t.Fatalf("entry at %d, tables end at %d, %d bytes read", off, l.tablesEnd, len(b))
			}
		}
	})
}
