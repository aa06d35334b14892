package imageset

import (
	"bytes"
	"compress/flate"
	"encoding"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"hash/adler32"
	"hash/crc32"
	"image"
)

// A unique PNG is a prepared PNG whose last rows carry a 64-bit code in
// the lowest bit of their red channel. Its zlib stream is cut where those
// rows begin: everything before (rows compressed once, ended by a sync
// flush, which leaves the stream byte-aligned and open) is shared by every
// copy, and only the last rows are compressed per copy, by a compressor of
// their own whose back-references stay inside them. The stream's Adler-32
// continues from the state saved at the cut. So a copy costs the
// compression of a few rows, whatever the picture's size, and its decoded
// pixels differ from every other copy's.
const pngCodeRows = 8

const pngPrefix = "data:image/png;base64,"

// pngBase is one picture ready to be made into unique PNGs.
type pngBase struct {
	// shared is the data URL up to the cut, a whole number of base64
	// groups.
	shared string
	// rows are the last rows' RGB bytes, unfiltered.
	rows       [][]byte
	adlerState []byte
}

// newPNGBase encodes img as an 8-bit RGB PNG cut before its last rows.
func newPNGBase(img *image.RGBA) (*pngBase, error) {
	b := img.Bounds()
	w, h := b.Dx(), b.Dy()
	code := min(pngCodeRows, h)
	rowOf := func(y int) []byte {
		row := make([]byte, 3*w)
		for x := 0; x < w; x++ {
			o := img.PixOffset(b.Min.X+x, b.Min.Y+y)
			copy(row[3*x:3*x+3], img.Pix[o:o+3])
		}
		return row
	}
	var z bytes.Buffer
	z.Write([]byte{0x78, 0x01}) // zlib: deflate, 32K window, no dictionary
	fw, err := flate.NewWriter(&z, flate.BestSpeed)
	if err != nil {
		return nil, fmt.Errorf("png: %w", err)
	}
	adler := adler32.New()
	filtered := make([]byte, 1+3*w)
	for y := 0; y < h-code; y++ {
		subFilter(filtered, rowOf(y))
		_, _ = fw.Write(filtered)
		_, _ = adler.Write(filtered)
	}
	if err := fw.Flush(); err != nil {
		return nil, fmt.Errorf("png: %w", err)
	}
	state, err := adler.(encoding.BinaryMarshaler).MarshalBinary()
	if err != nil {
		return nil, fmt.Errorf("png: %w", err)
	}
	var out bytes.Buffer
	out.WriteString("\x89PNG\r\n\x1a\n")
	ihdr := make([]byte, 13)
	binary.BigEndian.PutUint32(ihdr[0:], uint32(w))
	binary.BigEndian.PutUint32(ihdr[4:], uint32(h))
	ihdr[8], ihdr[9] = 8, 2 // 8 bits, RGB
	writeChunk(&out, "IHDR", ihdr)
	// A private ancillary chunk pads the shared part to whole base64
	// groups, so that it can be encoded apart from each copy's rows.
	pad := (3 - (out.Len()+12+12+z.Len())%3) % 3
	writeChunk(&out, "vlPd", make([]byte, pad))
	writeChunk(&out, "IDAT", z.Bytes())
	base := &pngBase{shared: pngPrefix + base64.StdEncoding.EncodeToString(out.Bytes()), adlerState: state}
	for y := h - code; y < h; y++ {
		base.rows = append(base.rows, rowOf(y))
	}
	return base, nil
}

// parts are the shared head and the copy's own rows with code in them,
// ended: the last IDAT chunk and IEND.
func (p *pngBase) parts(code uint64) (head, tail string, err error) {
	var z bytes.Buffer
	fw, err := flate.NewWriter(&z, flate.BestSpeed)
	if err != nil {
		return "", "", fmt.Errorf("png: %w", err)
	}
	adler := adler32.New()
	if err := adler.(encoding.BinaryUnmarshaler).UnmarshalBinary(p.adlerState); err != nil {
		return "", "", fmt.Errorf("png: %w", err)
	}
	bit := 0
	for _, src := range p.rows {
		row := append([]byte(nil), src...)
		for x := 0; x < len(row); x += 3 {
			row[x] = row[x]&^1 | byte(code>>(bit%64)&1)
			bit++
		}
		filtered := make([]byte, 1+len(row))
		subFilter(filtered, row)
		_, _ = fw.Write(filtered)
		_, _ = adler.Write(filtered)
	}
	if err := fw.Close(); err != nil {
		return "", "", fmt.Errorf("png: %w", err)
	}
	z.Write(adler.Sum(nil))
	var out bytes.Buffer
	writeChunk(&out, "IDAT", z.Bytes())
	writeChunk(&out, "IEND", nil)
	return p.shared, base64.StdEncoding.EncodeToString(out.Bytes()), nil
}

// subFilter writes row with PNG's Sub filter (each byte less the same
// channel of the pixel to its left) after the filter's type byte.
func subFilter(dst, row []byte) {
	dst[0] = 1
	for i, c := range row {
		if i >= 3 {
			c -= row[i-3]
		}
		dst[1+i] = c
	}
}

func writeChunk(out *bytes.Buffer, kind string, data []byte) {
	var n [4]byte
	binary.BigEndian.PutUint32(n[:], uint32(len(data)))
	out.Write(n[:])
	crc := crc32.NewIEEE()
	_, _ = crc.Write([]byte(kind))
	_, _ = crc.Write(data)
	out.WriteString(kind)
	out.Write(data)
	binary.BigEndian.PutUint32(n[:], crc.Sum32())
	out.Write(n[:])
}
