package imageset

import "image"

// canvas is an RGBA picture drawn with integer arithmetic only, so that the
// builtin scenes come out bit for bit the same on every architecture (no
// floating-point fusion differences between amd64 and arm64) and their hash
// is stable.
type canvas struct {
	w, h int
	pix  []uint8
}

func newCanvas(w, h int) *canvas {
	c := &canvas{w: w, h: h, pix: make([]uint8, 4*w*h)}
	for i := 3; i < len(c.pix); i += 4 {
		c.pix[i] = 255
	}
	return c
}

func (c *canvas) image() *image.RGBA {
	return &image.RGBA{Pix: c.pix, Stride: 4 * c.w, Rect: image.Rect(0, 0, c.w, c.h)}
}

// rgb is a colour with room for arithmetic beyond 0..255.
type rgb struct{ r, g, b int32 }

func clamp8(v int32) uint8 {
	if v < 0 {
		return 0
	}
	if v > 255 {
		return 255
	}
	return uint8(v)
}

// mix blends a towards b by t/256.
func mix(a, b rgb, t int32) rgb {
	return rgb{a.r + (b.r-a.r)*t/256, a.g + (b.g-a.g)*t/256, a.b + (b.b-a.b)*t/256}
}

// scale multiplies a colour by t/256.
func (a rgb) scale(t int32) rgb { return rgb{a.r * t / 256, a.g * t / 256, a.b * t / 256} }

// hash2 is a cheap integer hash of a pixel position, the source of texture.
func hash2(x, y int, seed uint32) uint32 {
	h := uint32(x)*0x9E3779B1 ^ uint32(y)*0x85EBCA77 ^ seed*0xC2B2AE3D
	h ^= h >> 15
	h *= 0x2C1B3C6D
	h ^= h >> 12
	h *= 0x297A2D39
	h ^= h >> 15
	return h
}

// noise is a signed texture value in [-amp, amp].
func noise(x, y int, seed uint32, amp int32) int32 {
	if amp == 0 {
		return 0
	}
	// Multiply-shift instead of a modulo: same spread, no division.
	return int32((uint64(hash2(x, y, seed)&0xffff)*uint64(2*amp+1))>>16) - amp
}

// valueNoise is smooth noise in 0..255 on a lattice of cell pixels.
func valueNoise(x, y, cell int, seed uint32) int32 {
	gx, gy := x/cell, y/cell
	fx, fy := int32((x%cell)*256/cell), int32((y%cell)*256/cell)
	// smoothstep weights
	fx = fx * fx * (768 - 2*fx) / 65536
	fy = fy * fy * (768 - 2*fy) / 65536
	v00 := int32(hash2(gx, gy, seed) & 255)
	v10 := int32(hash2(gx+1, gy, seed) & 255)
	v01 := int32(hash2(gx, gy+1, seed) & 255)
	v11 := int32(hash2(gx+1, gy+1, seed) & 255)
	a := v00 + (v10-v00)*fx/256
	b := v01 + (v11-v01)*fx/256
	return a + (b-a)*fy/256
}

func (c *canvas) set(x, y int, col rgb) {
	i := 4 * (y*c.w + x)
	c.pix[i], c.pix[i+1], c.pix[i+2] = clamp8(col.r), clamp8(col.g), clamp8(col.b)
}

func (c *canvas) get(x, y int) rgb {
	i := 4 * (y*c.w + x)
	return rgb{int32(c.pix[i]), int32(c.pix[i+1]), int32(c.pix[i+2])}
}

// clip bounds a rectangle to the canvas.
func (c *canvas) clip(x0, y0, x1, y1 int) (int, int, int, int) {
	return max(0, x0), max(0, y0), min(c.w, x1), min(c.h, y1)
}

// rect fills [x0,x1)×[y0,y1) with a colour and grain of amplitude amp.
func (c *canvas) rect(x0, y0, x1, y1 int, col rgb, amp int32, seed uint32) {
	x0, y0, x1, y1 = c.clip(x0, y0, x1, y1)
	for y := y0; y < y1; y++ {
		for x := x0; x < x1; x++ {
			n := noise(x, y, seed, amp)
			c.set(x, y, rgb{col.r + n, col.g + n, col.b + n})
		}
	}
}

// vgrad fills rows y0..y1 with a vertical gradient from top to bottom.
func (c *canvas) vgrad(x0, y0, x1, y1 int, top, bottom rgb, amp int32, seed uint32) {
	h := max(1, y1-y0)
	cx0, cy0, cx1, cy1 := c.clip(x0, y0, x1, y1)
	for y := cy0; y < cy1; y++ {
		col := mix(top, bottom, int32((y-y0)*256/h))
		for x := cx0; x < cx1; x++ {
			n := noise(x, y, seed, amp)
			c.set(x, y, rgb{col.r + n, col.g + n, col.b + n})
		}
	}
}

// ellipse fills an ellipse centred at (cx, cy).
func (c *canvas) ellipse(cx, cy, rx, ry int, col rgb, amp int32, seed uint32) {
	if rx <= 0 || ry <= 0 {
		return
	}
	x0, y0, x1, y1 := c.clip(cx-rx, cy-ry, cx+rx+1, cy+ry+1)
	rx2, ry2 := int64(rx*rx), int64(ry*ry)
	for y := y0; y < y1; y++ {
		dy := int64(y - cy)
		for x := x0; x < x1; x++ {
			dx := int64(x - cx)
			if dx*dx*ry2+dy*dy*rx2 <= rx2*ry2 {
				n := noise(x, y, seed, amp)
				c.set(x, y, rgb{col.r + n, col.g + n, col.b + n})
			}
		}
	}
}

// trapezoid fills rows y0..y1 between two edges that move linearly from
// (l0, r0) at y0 to (l1, r1) at y1: roads and floors in perspective.
func (c *canvas) trapezoid(y0, y1, l0, r0, l1, r1 int, col rgb, amp int32, seed uint32) {
	h := max(1, y1-y0)
	for y := max(0, y0); y < min(c.h, y1); y++ {
		t := y - y0
		l := l0 + (l1-l0)*t/h
		r := r0 + (r1-r0)*t/h
		for x := max(0, l); x < min(c.w, r); x++ {
			n := noise(x, y, seed, amp)
			c.set(x, y, rgb{col.r + n, col.g + n, col.b + n})
		}
	}
}

// glow brightens a disc around (cx, cy) towards col, strongest at the centre.
func (c *canvas) glow(cx, cy, r int, col rgb, strength int32) {
	if r <= 0 {
		return
	}
	x0, y0, x1, y1 := c.clip(cx-r, cy-r, cx+r+1, cy+r+1)
	r2 := int64(r * r)
	for y := y0; y < y1; y++ {
		dy := int64(y - cy)
		for x := x0; x < x1; x++ {
			dx := int64(x - cx)
			d2 := dx*dx + dy*dy
			if d2 >= r2 {
				continue
			}
			t := int32((r2 - d2) * int64(strength) / r2)
			p := c.get(x, y)
			c.set(x, y, rgb{p.r + (col.r*t)/256, p.g + (col.g*t)/256, p.b + (col.b*t)/256})
		}
	}
}

// shade multiplies a rectangle by t/256 (shadows, dimming).
func (c *canvas) shade(x0, y0, x1, y1 int, t int32) {
	x0, y0, x1, y1 = c.clip(x0, y0, x1, y1)
	for y := y0; y < y1; y++ {
		for x := x0; x < x1; x++ {
			c.set(x, y, c.get(x, y).scale(t))
		}
	}
}
