package imageset

import (
	"fmt"
	"image"
	"sync"

	"github.com/vlmfleet/vlmfleet/protocol"
)

// profileBases is how many of the set's pictures a profile's image size
// prepares: a profile picture may be as large as 8192x8192, and its
// copies differ by their code, not by the picture they start from.
const profileBases = 4

// profileKey is one image size and format of a profile.
type profileKey struct {
	res    protocol.Resolution
	format string
}

// profileCache holds a profile size's prepared pictures, made on first
// use; the zero value is ready.
type profileCache struct {
	mu      sync.Mutex
	entries map[profileKey]*profileEntry
}

type profileEntry struct {
	once sync.Once
	// parts makes copy code of prepared picture k.
	parts func(k int, code uint64) (head, tail string, err error)
	n     int
	err   error
}

// ProfilePicture is picture i at res in format (protocol.ImageFormatJPEG
// or ImageFormatPNG) as a data URL, head + tail, its pixels made to differ
// from every other (i, seed) pair's, as UniquePicture's do for the camera
// sizes, so that no engine cache answers a profile's picture. The first
// call for a size and format prepares a few of the set's pictures,
// scaled and cropped to it; later calls cost little.
func (s *Set) ProfilePicture(res protocol.Resolution, format string, i int, seed uint64) (head, tail string, err error) {
	e, err := s.profileEntry(res, format)
	if err != nil {
		return "", "", err
	}
	k := i % e.n
	if k < 0 {
		k += e.n
	}
	return e.parts(k, uniqueCode(uint64(i), seed))
}

func (s *Set) profileEntry(res protocol.Resolution, format string) (*profileEntry, error) {
	if err := res.Validate(); err != nil {
		return nil, fmt.Errorf("image set %s: %w", s.name, err)
	}
	if format != protocol.ImageFormatJPEG && format != protocol.ImageFormatPNG {
		return nil, fmt.Errorf("image set %s: image format %q: want %s or %s", s.name, format,
			protocol.ImageFormatJPEG, protocol.ImageFormatPNG)
	}
	key := profileKey{res, format}
	s.profiles.mu.Lock()
	if s.profiles.entries == nil {
		s.profiles.entries = map[profileKey]*profileEntry{}
	}
	e, ok := s.profiles.entries[key]
	if !ok {
		e = &profileEntry{}
		s.profiles.entries[key] = e
	}
	s.profiles.mu.Unlock()
	e.once.Do(func() { e.err = s.prepareProfile(e, key) })
	return e, e.err
}

// prepareProfile draws the first pictures of the set at the key's size and
// readies them to be made unique in its format.
func (s *Set) prepareProfile(e *profileEntry, key profileKey) error {
	n := min(s.n, profileBases)
	sz := protocol.ImageSize{Name: key.res.String(), Width: key.res.Width, Height: key.res.Height}
	jpegs := make([]uniqueBase, n)
	pngs := make([]*pngBase, n)
	errs := make([]error, n)
	parallelN(n, drawers(sz), func(k int) {
		img, err := s.profileSource(k, sz.Width, sz.Height)
		if err == nil {
			if key.format == protocol.ImageFormatPNG {
				pngs[k], err = newPNGBase(img)
			} else {
				var b []byte
				if b, err = encodeJPEG(img); err == nil {
					jpegs[k], err = newUniqueBase(dataURL(b), sz)
				}
			}
		}
		if err != nil {
			errs[k] = fmt.Errorf("image set %s: picture %d at %s %s: %w", s.name, k, sz.Name, key.format, err)
		}
	})
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	e.n = n
	if key.format == protocol.ImageFormatPNG {
		e.parts = func(k int, code uint64) (string, string, error) { return pngs[k].parts(code) }
	} else {
		e.parts = func(k int, code uint64) (string, string, error) { return jpegs[k].parts(code) }
	}
	return nil
}

// profileSource is picture k at w×h. The scenes are drawn for camera
// frames: a side under drawMinSide or an aspect ratio past drawMaxAspect
// is drawn at a size that has neither, and cropped and scaled to w×h.
func (s *Set) profileSource(k, w, h int) (*image.RGBA, error) {
	dw, dh := max(w, drawMinSide), max(h, drawMinSide)
	dh = max(dh, dw/drawMaxAspect)
	dw = max(dw, dh/drawMaxAspect)
	img, err := s.source(k, dw, dh)
	if err != nil || (dw == w && dh == h) {
		return img, err
	}
	return fillCrop(img, w, h), nil
}

const (
	drawMinSide   = 256
	drawMaxAspect = 4
)
