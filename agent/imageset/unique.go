package imageset

import (
	"bytes"
	"fmt"
	"image"
	"image/draw"
	"image/jpeg"
)

// UniqueDataURLs returns n data URLs at size whose pixels differ from each
// other and from the plain set, cycling the pictures from index start: a
// real camera never sends the same frame twice, and an engine's image or
// prefix cache must not be able to recognise one. Frame k carries a
// camera-style overlay in its top-left corner that encodes seed+start+k in
// 64 black or white blocks, so any two frames of one call differ in at
// least one 16×16 block. Each frame is a JPEG encode: call this before a
// measurement, not on its request path.
func (s *Set) UniqueDataURLs(size string, start, n int, seed uint64) ([]string, error) {
	if n < 0 {
		return nil, fmt.Errorf("image set: %d unique images requested", n)
	}
	c, sz, err := s.encoded(size)
	if err != nil {
		return nil, err
	}
	out := make([]string, n)
	errs := make([]error, n)
	parallel(n, func(k int) {
		j, err := jpegOf(c.urls[s.index(start+k)])
		if err != nil {
			errs[k] = err
			return
		}
		b, err := stamped(j, seed+uint64(start)+uint64(k))
		if err != nil {
			errs[k] = fmt.Errorf("image set %s: unique picture %d at %s: %w", s.name, start+k, sz.Name, err)
			return
		}
		out[k] = dataURL(b)
	})
	for _, e := range errs {
		if e != nil {
			return nil, e
		}
	}
	return out, nil
}

// stampBlock is the side of one bit of the overlay, in pixels: a multiple
// of JPEG's 8×8 blocks (16 also covers its subsampled chroma), so the bits
// survive compression.
const stampBlock = 16

// stamped decodes a picture, draws the overlay for v and encodes it again.
func stamped(jpegBytes []byte, v uint64) ([]byte, error) {
	src, err := jpeg.Decode(bytes.NewReader(jpegBytes))
	if err != nil {
		return nil, err
	}
	img := image.NewRGBA(src.Bounds())
	draw.Draw(img, img.Bounds(), src, src.Bounds().Min, draw.Src)
	stamp(img, v)
	return encodeJPEG(img)
}

// stamp draws v as two rows of 32 bits, on a dark frame, at the top left.
func stamp(img *image.RGBA, v uint64) {
	const margin = stampBlock
	frame := image.Rect(margin/2, margin/2, margin+32*stampBlock+margin/2, margin+2*stampBlock+margin/2)
	draw.Draw(img, frame.Intersect(img.Bounds()), image.NewUniform(image.Black.C), image.Point{}, draw.Src)
	for bit := range 64 {
		if v>>bit&1 == 0 {
			continue
		}
		x := margin + (bit%32)*stampBlock
		y := margin + (bit/32)*stampBlock
		r := image.Rect(x, y, x+stampBlock, y+stampBlock).Intersect(img.Bounds())
		draw.Draw(img, r, image.NewUniform(image.White.C), image.Point{}, draw.Src)
	}
}
