package imageset

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"image"
	"image/draw"
	"image/jpeg"
	"math/rand/v2"
	"strings"
	"sync"

	"github.com/vlmfleet/vlmfleet/protocol"
)

// A unique picture is a prepared JPEG whose quantization tables carry a
// 64-bit code: each set bit raises one entry by one step. The decoder
// scales every coefficient at that position by the entry, so the pixels
// of each block that has such a coefficient change, while the entropy-coded
// data (nearly all of the file) is copied as it is: no decode, no encode on
// the request path. Codes come from a hash of the picture's number and the
// phase's seed, so any two pictures of a run differ in about half of the 64
// entries, and a block whose coefficients a few of them scale is enough to
// tell two pictures apart. The entries are the middle and high frequencies
// (zig-zag 6 to 63 of the luma table, 6 to 11 of the chroma one): one step
// there changes a pixel by a level or two at most, where the lowest
// frequencies would shift whole blocks visibly.
const (
	codeLumaFirst   = 6
	codeChromaFirst = 6
	codeChromaLast  = 11
)

// uniqueBase is one picture at one size ready to be made unique.
type uniqueBase struct {
	// url is the data URL the unique copies start from.
	url string
	// header is the JPEG's bytes up to the end of its last quantization
	// table, padded to whole base64 groups so that it can be encoded apart
	// from the rest, which url already holds encoded.
	header []byte
	// entries are the offsets in header of the quantization entries that
	// carry the code's bits.
	entries []int
}

// uniqueCache holds one size's unique bases, made on first use.
type uniqueCache struct {
	once  sync.Once
	bases []uniqueBase
	err   error
}

// UniqueDataURL returns picture i (mod Len) at size as a data URL whose
// decoded pixels differ from the plain picture's and from those of every
// other (i, seed) pair: a real camera never sends the same frame twice,
// and an engine's image or prefix cache must not recognise one. The first
// call for a size prepares the set at that size.
func (s *Set) UniqueDataURL(size string, i int, seed uint64) (string, error) {
	head, tail, err := s.UniquePicture(size, i, seed)
	return head + tail, err
}

// UniquePicture is UniqueDataURL as head + tail: head is the picture's
// own (its first few hundred bytes, where the copies differ), tail the
// rest, shared by every copy of the picture. A request that writes both
// costs no copy of the picture, so it may be made just before the request
// is sent.
func (s *Set) UniquePicture(size string, i int, seed uint64) (head, tail string, err error) {
	u, err := s.uniqueBases(size)
	if err != nil {
		return "", "", err
	}
	return u[s.index(i)].parts(uniqueCode(uint64(i), seed))
}

func (s *Set) uniqueBases(size string) ([]uniqueBase, error) {
	c, sz, err := s.encoded(size)
	if err != nil {
		return nil, err
	}
	u := &s.unique[protocol.SizeRank(sz.Name)]
	u.once.Do(func() {
		u.bases = make([]uniqueBase, s.n)
		errs := make([]error, s.n)
		parallel(s.n, func(k int) {
			b, err := newUniqueBase(c.urls[k], sz)
			if err != nil {
				errs[k] = fmt.Errorf("image set %s: unique picture %d at %s: %w", s.name, k, sz.Name, err)
			}
			u.bases[k] = b
		})
		for _, e := range errs {
			if e != nil {
				u.err = e
				return
			}
		}
	})
	return u.bases, u.err
}

// newUniqueBase prepares the picture of data URL url. A picture so flat
// that its middle frequencies are all zero (one colour, a blank wall) would
// decode alike whatever its tables say: it gets, once, a patch of fine
// texture in its top-left corner, which the tables then vary.
func newUniqueBase(url string, sz protocol.ImageSize) (uniqueBase, error) {
	head, total, layout, err := readURLLayout(url)
	if err != nil {
		return uniqueBase{}, err
	}
	if layout.flat(sz, total) {
		raw, err := jpegOf(url)
		if err == nil {
			raw, err = textured(raw)
		}
		if err != nil {
			return uniqueBase{}, err
		}
		url = dataURL(raw)
		if head, total, layout, err = readURLLayout(url); err != nil {
			return uniqueBase{}, err
		}
	}
	if len(layout.entries) == 0 {
		return uniqueBase{}, fmt.Errorf("the JPEG has no 8-bit quantization table to vary")
	}
	end := min(total, (layout.tablesEnd+2)/3*3)
	return uniqueBase{url: url, header: append([]byte(nil), head[:end]...), entries: layout.entries}, nil
}

// readURLLayout reads the layout of the JPEG in a data URL from as few of
// its first bytes as hold it, so that preparing a picture decodes no more
// than its header: it returns those bytes and the JPEG's whole length.
func readURLLayout(url string) (head []byte, total int, l jpegLayout, err error) {
	enc := url[len(dataURLPrefix):]
	total, err = base64.StdEncoding.DecodedLen(len(enc)), nil
	if strings.HasSuffix(enc, "==") {
		total -= 2
	} else if strings.HasSuffix(enc, "=") {
		total--
	}
	for n := 4096; ; n *= 2 {
		n = min(n, len(enc))
		head, err = base64.StdEncoding.DecodeString(enc[:n])
		if err != nil {
			return nil, 0, l, fmt.Errorf("image set: picture's data URL: %w", err)
		}
		l, err = readLayout(head, total)
		if err == nil || n == len(enc) || !errors.Is(err, errShortHeader) {
			return head, total, l, err
		}
	}
}

// parts are the base with code's bits set in its tables, as a data URL
// split where its header's base64 ends.
func (u *uniqueBase) parts(code uint64) (head, tail string, err error) {
	var buf [1024]byte
	hdr := append(buf[:0], u.header...)
	for bit, off := range u.entries {
		if code>>(bit%64)&1 == 0 {
			continue
		}
		if hdr[off] < 255 {
			hdr[off]++
		} else {
			hdr[off]--
		}
	}
	n := len(dataURLPrefix) + base64.StdEncoding.EncodedLen(len(hdr))
	out := make([]byte, n)
	copy(out, dataURLPrefix)
	base64.StdEncoding.Encode(out[len(dataURLPrefix):], hdr)
	return string(out), u.url[n:], nil
}

// uniqueCode is the code of picture i of the phase with seed: never zero,
// so that a unique picture is never the plain one.
func uniqueCode(i, seed uint64) uint64 {
	c := splitmix64(seed ^ splitmix64(i+1))
	if c == 0 {
		c = 1
	}
	return c
}

func splitmix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

// jpegLayout is what newUniqueBase needs of a JPEG's markers.
type jpegLayout struct {
	// entries are the offsets of the quantization entries that carry a
	// code (8-bit tables only), luma's first.
	entries []int
	// tablesEnd is the offset just past the last quantization table.
	tablesEnd int
	// scanStart is the offset of the entropy-coded data of the first
	// scan.
	scanStart int
}

// flat says whether the picture's entropy-coded data is too small for
// its middle frequencies to hold much: a block of one colour costs about a
// byte with its chroma, a textured one several, so under two bytes per 8×8
// luma block is a picture of flat areas. A picture wrongly taken for flat
// only gets the texture patch in its unique copies.
func (l jpegLayout) flat(sz protocol.ImageSize, total int) bool {
	blocks := ((sz.Width + 7) / 8) * ((sz.Height + 7) / 8)
	return total-l.scanStart < 2*blocks
}

// errShortHeader: the bytes read end before the first scan.
var errShortHeader = errors.New("the JPEG's header runs past the bytes read")

// readLayout walks the markers of a JPEG of total bytes from its start to
// its first scan, in b, the first bytes of it.
func readLayout(b []byte, total int) (jpegLayout, error) {
	var l jpegLayout
	if len(b) < 4 || b[0] != 0xFF || b[1] != 0xD8 {
		return l, fmt.Errorf("not a JPEG (no start of image)")
	}
	var luma, chroma []int
	for p := 2; ; {
		if p+4 > len(b) {
			if len(b) < total {
				return l, errShortHeader
			}
			return l, fmt.Errorf("the JPEG ends at byte %d before its first scan", p)
		}
		if b[p] != 0xFF {
			return l, fmt.Errorf("malformed JPEG marker at byte %d", p)
		}
		marker, n := b[p+1], int(b[p+2])<<8|int(b[p+3])
		seg := p + 4
		end := p + 2 + n
		switch {
		case n < 2 || end > total:
			return l, fmt.Errorf("JPEG segment at byte %d runs past the end", p)
		case end > len(b):
			return l, errShortHeader
		}
		switch marker {
		case 0xDB:
			for q := seg; q < end; {
				precision, table := b[q]>>4, b[q]&15
				size := 64 * (1 + int(precision))
				if q+1+size > end {
					return l, fmt.Errorf("JPEG quantization table at byte %d runs past its segment", q)
				}
				if precision == 0 && table == 0 {
					luma = zigzagRange(luma, q+1, codeLumaFirst, 63)
				}
				if precision == 0 && table == 1 {
					chroma = zigzagRange(chroma, q+1, codeChromaFirst, codeChromaLast)
				}
				q += 1 + size
			}
			l.tablesEnd = end
		case 0xDA:
			l.entries = append(luma, chroma...)
			l.scanStart = end
			return l, nil
		}
		p = end
	}
}

func zigzagRange(offsets []int, table, first, last int) []int {
	for k := first; k <= last; k++ {
		offsets = append(offsets, table+k)
	}
	return offsets
}

// texturePatch is the side of the texture a flat picture gets, in pixels:
// 64×64 covers 64 luma blocks and their chroma.
const texturePatch = 64

// textured decodes a flat picture, draws fine noise (from a fixed seed, so
// a set stays the same from run to run) in its top-left corner, and
// encodes it again.
func textured(raw []byte) ([]byte, error) {
	src, err := jpeg.Decode(bytes.NewReader(raw))
	if err != nil {
		return nil, err
	}
	img := image.NewRGBA(src.Bounds())
	draw.Draw(img, img.Bounds(), src, src.Bounds().Min, draw.Src)
	rng := rand.New(rand.NewPCG(1, 2))
	patch := image.Rect(0, 0, texturePatch, texturePatch).Add(img.Bounds().Min).Intersect(img.Bounds())
	for y := patch.Min.Y; y < patch.Max.Y; y++ {
		for x := patch.Min.X; x < patch.Max.X; x++ {
			v := uint8(rng.IntN(256))
			off := img.PixOffset(x, y)
			img.Pix[off], img.Pix[off+1], img.Pix[off+2] = v, uint8(rng.IntN(256)), 255-v
		}
	}
	return encodeJPEG(img)
}
