package imageset

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"image/jpeg"
	"io"
	"os"
	"path/filepath"
	"strconv"

	"github.com/vlmfleet/vlmfleet/internal/atomicfile"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// The built-in pictures cost seconds of CPU and a hundred megabytes to
// draw at every size (a 2K canvas alone is 15 MB), at every start of a
// process: too much for a Jetson that shares its memory with the engine.
// Drawn once, they are kept on disk as the JPEGs the requests carry, and
// read back at the next start.

// drawingVersion names the drawing of the built-in scenes: the start of
// their hash (TestBuiltin holds the two together). Pictures cached under
// another version are never read, so a changed drawing is drawn again.
const drawingVersion = "5b66655170e4"

// CacheDir is where prepared pictures are kept by default:
// $XDG_CACHE_HOME/vlmfleet/pictures, else $HOME/.cache/vlmfleet/pictures;
// "" when neither is set (no cache).
func CacheDir(getenv func(string) string) string {
	if d := getenv("XDG_CACHE_HOME"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "vlmfleet", "pictures")
	}
	if h := getenv("HOME"); h != "" && filepath.IsAbs(h) {
		return filepath.Join(h, ".cache", "vlmfleet", "pictures")
	}
	return ""
}

// BuiltinCached is Builtin with its prepared pictures kept under dir: each
// picture is read from there when a whole, valid copy is there, and drawn,
// encoded and written there otherwise. A cache that cannot be written
// costs only the drawing; dir "" is no cache.
func BuiltinCached(dir string) (*Set, error) {
	s, err := Builtin()
	if err != nil || dir == "" {
		return s, err
	}
	s.cache = &diskCache{dir: filepath.Join(dir, BuiltinName+"-"+drawingVersion)}
	hashFn := s.hashFn
	s.hashFn = func() string {
		if b, err := s.cache.read("hash"); err == nil && len(b) == 64 {
			return string(b)
		}
		h := hashFn()
		s.cache.write("hash", []byte(h))
		return h
	}
	return s, nil
}

// diskCache is a directory of framed files: a magic line, the sha256 of
// the content in hex and a newline, then the content. A file cut short,
// overwritten or damaged fails its sha256 and is made again.
type diskCache struct {
	dir string
}

const cacheMagic = "vlmfleet-picture 1\n"

// maxCached bounds what is read back: a 2K JPEG is under 2 MB.
const maxCached = 32 << 20

func pictureName(size string, i int) string { return size + "-" + strconv.Itoa(i) + ".jpg" }

// read returns the content of name, or an error when it is missing or not
// whole.
func (c *diskCache) read(name string) ([]byte, error) {
	f, err := os.Open(filepath.Join(c.dir, name))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if fi.Size() > maxCached {
		return nil, fmt.Errorf("cached picture of %d bytes", fi.Size())
	}
	// Read in one piece at its size: no growing buffer to throw away.
	b := make([]byte, fi.Size())
	if _, err := io.ReadFull(f, b); err != nil {
		return nil, err
	}
	rest, ok := bytes.CutPrefix(b, []byte(cacheMagic))
	if !ok || len(rest) < 65 || rest[64] != '\n' {
		return nil, errors.New("not a cached picture")
	}
	sum := sha256.Sum256(rest[65:])
	if hex.EncodeToString(sum[:]) != string(rest[:64]) {
		return nil, errors.New("cached picture damaged")
	}
	return rest[65:], nil
}

// write keeps content under name, whole or not at all; a failure leaves
// the cache as it was.
func (c *diskCache) write(name string, content []byte) {
	if err := os.MkdirAll(c.dir, 0o755); err != nil {
		return
	}
	sum := sha256.Sum256(content)
	_, _ = atomicfile.Write(filepath.Join(c.dir, name), 0o644, func(w io.Writer) error {
		if _, err := io.WriteString(w, cacheMagic+hex.EncodeToString(sum[:])+"\n"); err != nil {
			return err
		}
		_, err := w.Write(content)
		return err
	})
}

// picture returns a cached picture i at size sz, or an error when the
// cache has no whole JPEG of exactly that size.
func (c *diskCache) picture(sz protocol.ImageSize, i int) ([]byte, error) {
	b, err := c.read(pictureName(sz.Name, i))
	if err != nil {
		return nil, err
	}
	cfg, err := jpeg.DecodeConfig(bytes.NewReader(b))
	if err != nil || cfg.Width != sz.Width || cfg.Height != sz.Height {
		return nil, fmt.Errorf("cached picture %d at %s: not a %d×%d JPEG", i, sz.Name, sz.Width, sz.Height)
	}
	return b, nil
}
