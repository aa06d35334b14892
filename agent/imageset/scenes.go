package imageset

import (
	"math/rand/v2"
	"sort"
)

// The sixteen builtin pictures are scenes a surveillance camera sees,
// generated from code (the project may ship them: see LICENSE-images.md):
// streets, parking lots, a warehouse, shops, a garage, a park, by day, at
// dusk and at night, in rain, snow and fog. Each is drawn directly at the
// size asked for (its lengths are written for 2560×1440) from a fixed seed
// with integer arithmetic only, so the set is the same on every machine.

type light int

const (
	day light = iota
	dusk
	night
	overcast
)

type weather int

const (
	clear weather = iota
	rain
	snow
	fog
)

type sceneKind int

const (
	street sceneKind = iota
	parking
	warehouse
	dock
	shop
	garage
	park
)

type scene struct {
	kind    sceneKind
	light   light
	weather weather
	seed    uint64
	people  int
	cars    int
}

// scenes lists the builtin sixteen in their fixed order.
func scenes() []scene {
	return []scene{
		{street, day, clear, 101, 6, 5},
		{street, dusk, clear, 102, 4, 6},
		{street, night, clear, 103, 3, 5},
		{parking, day, clear, 104, 3, 14},
		{parking, night, clear, 105, 1, 10},
		{warehouse, day, clear, 106, 3, 0},
		{dock, overcast, clear, 107, 3, 2},
		{shop, day, clear, 108, 4, 0},
		{shop, dusk, clear, 109, 2, 0},
		{street, day, clear, 110, 14, 3},
		{street, overcast, rain, 111, 4, 5},
		{parking, overcast, snow, 112, 2, 9},
		{garage, day, clear, 113, 2, 8},
		{park, day, clear, 114, 6, 0},
		{street, overcast, fog, 115, 4, 4},
		{warehouse, night, clear, 116, 2, 0},
	}
}

// Source dimensions of the builtin pictures: the largest size of the method.
const (
	sourceW = 2560
	sourceH = 1440
)

type palette struct {
	skyTop, skyHorizon rgb
	ambient            int32 // 256 = full daylight
	lit                int32 // 0..256: share of windows lit
}

func paletteFor(l light) palette {
	switch l {
	case dusk:
		return palette{rgb{44, 52, 112}, rgb{238, 150, 92}, 200, 90}
	case night:
		return palette{rgb{4, 7, 20}, rgb{26, 32, 58}, 110, 150}
	case overcast:
		return palette{rgb{142, 148, 156}, rgb{200, 202, 204}, 215, 30}
	}
	return palette{rgb{62, 120, 196}, rgb{182, 208, 232}, 256, 10}
}

// painter draws one scene.
type painter struct {
	c   *canvas
	sc  scene
	pal palette
	rng *rand.Rand
	hz  int // horizon row
	vx  int // vanishing point column
}

// render draws scene sc at w×h.
func render(sc scene, w, h int) *canvas {
	p := &painter{c: newCanvas(w, h), sc: sc, pal: paletteFor(sc.light),
		rng: rand.New(rand.NewPCG(sc.seed, 0x1ced)), hz: h * 40 / 100, vx: w/2 + (int(sc.seed%7)-3)*w/40}
	switch sc.kind {
	case street:
		p.stage(1).sky()
		p.stage(2).buildings(p.hz + h/40)
		p.stage(3).ground(rgb{120, 118, 112}, 10)
		p.stage(4).road()
		p.stage(5).trees(3, true)
		p.stage(6).lamps()
		p.stage(7).objects()
	case parking:
		p.stage(8).sky()
		p.stage(9).treeLine()
		p.stage(10).ground(rgb{70, 72, 74}, 12)
		p.stage(11).stallLines()
		p.stage(12).lamps()
		p.stage(13).objects()
	case park:
		p.stage(14).sky()
		p.stage(15).treeLine()
		p.stage(16).grass()
		p.stage(17).path()
		p.stage(18).trees(7, false)
		p.stage(19).objects()
	case dock:
		p.stage(20).sky()
		p.stage(21).dockWall()
		p.stage(22).ground(rgb{150, 146, 138}, 14)
		p.stage(23).objects()
	case warehouse, shop, garage:
		p.stage(24).room()
		p.stage(25).objects()
	}
	p.stage(99).atmosphere()
	return p.c
}

// stage gives each drawing step its own random stream, so that a step
// whose element count depends on the canvas size (a last building that no
// longer fits) does not shift the layout of every later one.
func (p *painter) stage(k uint64) *painter {
	p.rng = rand.New(rand.NewPCG(p.sc.seed, k))
	return p
}

func (p *painter) r(lo, hi int) int {
	if hi <= lo {
		return lo
	}
	return lo + p.rng.IntN(hi-lo)
}

func (p *painter) seed() uint32 { return p.rng.Uint32() }

func (p *painter) sky() {
	c := p.c
	c.vgrad(0, 0, c.w, p.hz+c.h/20, p.pal.skyTop, p.pal.skyHorizon, 2, p.seed())
	s := p.seed()
	if p.sc.light == night {
		for range 400 {
			x, y := p.r(0, c.w), p.r(0, p.hz)
			v := int32(p.r(120, 255))
			c.rect(x, y, x+p.u(2), y+p.u(2), rgb{v, v, v}, 0, 0)
		}
		return
	}
	// Clouds: two octaves of smooth noise, brightened above a threshold.
	cloud := rgb{245, 245, 248}
	if p.sc.light == dusk {
		cloud = rgb{250, 190, 160}
	}
	// Evaluated per 2×2 block: clouds are smooth, the sky's grain is not.
	cell := c.w / 9
	for y := 0; y < p.hz; y += 2 {
		for x := 0; x < c.w; x += 2 {
			v := valueNoise(x, y*3, cell, s)*2/3 + valueNoise(x, y*3, cell/3, s+1)/3
			if v <= 140 {
				continue
			}
			t := min(200, (v-140)*4)
			for yy := y; yy < min(y+2, p.hz); yy++ {
				for xx := x; xx < min(x+2, c.w); xx++ {
					c.set(xx, yy, mix(c.get(xx, yy), cloud, t))
				}
			}
		}
	}
}

// depthScale is an object's size factor (×1024) for its foot at row y,
// in source pixels: sizes are written for 2560 pixels across.
func (p *painter) depthScale(y int) int {
	return max(1, (y-p.hz)*1024/(p.c.h-p.hz)*p.c.w/sourceW)
}

// u converts a length in source pixels (2560 across) to this canvas.
func (p *painter) u(v int) int { return max(1, v*p.c.w/sourceW) }

func (p *painter) buildings(base int) {
	c := p.c
	for x := -p.r(0, c.w/10); x < c.w; {
		bw := p.r(c.w/14, c.w/6)
		top := p.hz - p.r(c.h/10, c.h*32/100)
		col := []rgb{{150, 84, 64}, {170, 160, 146}, {112, 116, 124}, {196, 184, 160}, {90, 96, 110}, {128, 70, 58}}[p.r(0, 6)]
		col = col.scale(p.pal.ambient)
		c.rect(x, top, x+bw, base, col, 9, p.seed())
		c.rect(x, top, x+bw, top+c.h/120, col.scale(180), 4, p.seed()) // cornice
		c.shade(x+bw-bw/12, top, x+bw, base, 200)                      // side in shadow
		// Windows draw nothing from the random stream: their number
		// depends on the canvas size, the rest of the layout must not.
		ww, wh := max(p.u(6), bw/12), max(p.u(8), c.h/40)
		bseed := p.seed()
		for wy := top + wh; wy+wh < base-wh/2; wy += wh * 2 {
			for wx := x + ww; wx+ww < x+bw-ww/2; wx += ww * 2 {
				glass := mix(p.pal.skyHorizon, rgb{30, 40, 52}, 150).scale(p.pal.ambient)
				h := hash2((wx-x)/ww, (wy-top)/wh, bseed)
				if int32(h&255) < p.pal.lit {
					glass = rgb{255, 214, 140}
				}
				c.rect(wx, wy, wx+ww, wy+wh, glass, 6, h)
				c.rect(wx, wy+wh, wx+ww, wy+wh+max(2, wh/8), col.scale(300), 0, 0) // sill
			}
		}
		x += bw + p.r(0, c.w/60)
	}
}

func (p *painter) ground(col rgb, amp int32) {
	c := p.c
	if p.sc.weather == snow {
		col = rgb{226, 230, 236}
	}
	c.rect(0, p.hz, c.w, c.h, col.scale(p.pal.ambient), amp, p.seed())
	// Stains and patches: smooth noise darkening.
	s := p.seed()
	for y := p.hz; y < c.h; y += 4 {
		for x := 0; x < c.w; x += 4 {
			if v := valueNoise(x, y*4, c.w/16, s); v > 170 {
				c.shade(x, y, x+4, y+4, 256-(v-170)/2)
			}
		}
	}
}

func (p *painter) road() {
	c := p.c
	asphalt := rgb{58, 60, 64}.scale(p.pal.ambient)
	if p.sc.weather == snow {
		asphalt = rgb{180, 184, 190}
	}
	top := c.w / 16
	c.trapezoid(p.hz, c.h, p.vx-top, p.vx+top, -c.w/3, c.w+c.w/3, asphalt, 11, p.seed())
	// Curbs.
	curb := rgb{170, 168, 160}.scale(p.pal.ambient)
	c.trapezoid(p.hz, c.h, p.vx-top-c.w/200, p.vx-top, -c.w/3-c.w/60, -c.w/3, curb, 6, p.seed())
	c.trapezoid(p.hz, c.h, p.vx+top, p.vx+top+c.w/200, c.w+c.w/3, c.w+c.w/3+c.w/60, curb, 6, p.seed())
	// Centre dashes, spaced and sized by depth.
	paint := rgb{236, 226, 170}.scale(p.pal.ambient)
	for y := p.hz + c.h/60; y < c.h; {
		s := p.depthScale(y)
		l := max(2, 140*s/1024)
		half := max(1, 14*s/1024)
		c.rect(p.vx-half, y, p.vx+half, min(c.h, y+l), paint, 8, p.seed())
		y += l * 2
	}
	// A crosswalk in the foreground on busy streets.
	if p.sc.people > 8 {
		y0, y1 := c.h*78/100, c.h*88/100
		for x := 0; x < c.w; x += c.w / 16 {
			c.trapezoid(y0, y1, x, x+c.w/32, x-c.w/80, x+c.w/32+c.w/80, rgb{226, 226, 220}.scale(p.pal.ambient), 10, p.seed())
		}
	}
}

func (p *painter) stallLines() {
	c := p.c
	paint := rgb{230, 230, 224}.scale(p.pal.ambient)
	if p.sc.weather == snow {
		return // buried
	}
	for _, row := range []int{55, 72, 94} {
		y := c.h * row / 100
		s := p.depthScale(y)
		depth := 260 * s / 1024
		gap := 330 * s / 1024
		for x := p.vx % max(1, gap); x < c.w; x += gap {
			lean := (x - p.vx) * depth / (c.h - p.hz) / 2
			c.trapezoid(y-depth, y, x-lean-2, x-lean+max(2, 8*s/1024), x-2, x+max(3, 10*s/1024), paint, 10, p.seed())
		}
	}
}

func (p *painter) treeLine() {
	c := p.c
	for x := 0; x < c.w; x += c.w / 60 {
		h := p.r(c.h/20, c.h/9)
		g := rgb{int32(p.r(30, 60)), int32(p.r(70, 110)), int32(p.r(30, 60))}.scale(p.pal.ambient)
		c.ellipse(x, p.hz-h/2, c.w/50, h/2+c.h/60, g, 22, p.seed())
	}
}

func (p *painter) grass() {
	c := p.c
	s := p.seed()
	base := rgb{74, 124, 52}
	if p.sc.weather == snow {
		base = rgb{226, 230, 236}
	}
	for y := p.hz; y < c.h; y++ {
		v := int32(0)
		for x := 0; x < c.w; x++ {
			if x%4 == 0 { // smooth: once per 4 pixels is enough
				v = valueNoise(x, y*3, c.w/24, s) - 128
			}
			n := noise(x, y, s, 18)
			c.set(x, y, rgb{base.r + v/6 + n, base.g + v/4 + n, base.b + v/8 + n}.scale(p.pal.ambient))
		}
	}
}

func (p *painter) path() {
	c := p.c
	c.trapezoid(p.hz, c.h, p.vx-c.w/60, p.vx+c.w/60, c.w/4, c.w*3/4, rgb{186, 170, 140}.scale(p.pal.ambient), 16, p.seed())
	for range 3 { // benches
		y := p.r(p.hz+c.h/8, c.h*9/10)
		s := p.depthScale(y)
		x := p.vx + (p.r(0, 2)*2-1)*(c.w/8+c.w*s/2048)
		bw, bh := 300*s/1024, 60*s/1024
		wood := rgb{120, 78, 44}.scale(p.pal.ambient)
		c.rect(x-bw/2, y-bh*2, x+bw/2, y-bh*2+bh/3, wood, 10, p.seed())
		c.rect(x-bw/2, y-bh, x+bw/2, y-bh+bh/3, wood, 10, p.seed())
		c.rect(x-bw/2, y-bh, x-bw/2+bw/20, y, rgb{40, 40, 40}, 4, p.seed())
		c.rect(x+bw/2-bw/20, y-bh, x+bw/2, y, rgb{40, 40, 40}, 4, p.seed())
	}
}

func (p *painter) trees(n int, sides bool) {
	c := p.c
	for range n {
		y := p.r(p.hz+c.h/16, c.h*95/100)
		s := p.depthScale(y)
		x := p.r(0, c.w)
		if sides {
			x = p.vx + (p.r(0, 2)*2-1)*(c.w/8+c.w*s*7/10240)
		}
		p.tree(x, y, s)
	}
}

func (p *painter) tree(x, y, s int) {
	c := p.c
	th, tw := 700*s/1024, max(3, 40*s/1024)
	c.ellipse(x+tw, y, 160*s/1024, 30*s/1024, rgb{0, 0, 0}, 0, 0)
	c.shade(x-200*s/1024, y-30*s/1024, x+260*s/1024, y+30*s/1024, 256)
	c.rect(x-tw/2, y-th, x+tw/2, y, rgb{84, 62, 44}.scale(p.pal.ambient), 12, p.seed())
	leaf := rgb{int32(p.r(40, 70)), int32(p.r(96, 140)), int32(p.r(36, 60))}
	if p.sc.weather == snow {
		leaf = rgb{200, 206, 212}
	}
	for range 9 {
		dx, dy := p.r(-260, 260)*s/1024, p.r(-260, 120)*s/1024
		r := p.r(130, 230) * s / 1024
		col := leaf.scale(int32(p.r(170, 290)) * p.pal.ambient / 256)
		c.ellipse(x+dx, y-th+dy, r, r*9/10, col, 30, p.seed())
	}
}

func (p *painter) lamps() {
	c := p.c
	for k := range 4 {
		y := p.hz + (c.h-p.hz)*(k+1)/5
		s := p.depthScale(y)
		for _, side := range []int{-1, 1} {
			x := p.vx + side*(c.w/12+c.w*s*6/10240)
			ph := 1100 * s / 1024
			pw := max(2, 22*s/1024)
			c.rect(x-pw/2, y-ph, x+pw/2, y, rgb{60, 62, 66}, 5, p.seed())
			c.rect(x-side*90*s/1024, y-ph, x+pw/2, y-ph+pw, rgb{60, 62, 66}, 5, p.seed())
			hx := x - side*90*s/1024
			c.rect(hx-40*s/1024, y-ph+pw, hx+40*s/1024, y-ph+pw+16*s/1024, rgb{240, 236, 200}, 0, 0)
			if p.sc.light == night || p.sc.light == dusk {
				c.glow(hx, y-ph+pw, 260*s/1024, rgb{255, 210, 140}, 150)
				c.glow(hx, y, 300*s/1024, rgb{255, 200, 130}, 60)
			}
		}
	}
}

func (p *painter) dockWall() {
	c := p.c
	top, base := c.h*8/100, p.hz+c.h/10
	p.hz = base
	wall := rgb{150, 156, 160}.scale(p.pal.ambient)
	c.rect(0, top, c.w, base, wall, 6, p.seed())
	for x := 0; x < c.w; x += p.u(24) { // corrugation
		c.shade(x, top, x+p.u(8), base, 215)
	}
	for k := range 4 {
		x := c.w*k/4 + c.w/24
		dw := c.w / 6
		c.rect(x, base-c.h*30/100, x+dw, base, rgb{96, 100, 104}, 5, p.seed())
		open := p.r(0, 3) == 0
		for y := base - c.h*30/100; y < base; y += p.u(18) {
			if open && y > base-c.h*18/100 {
				c.rect(x, y, x+dw, y+p.u(18), rgb{20, 18, 16}, 6, p.seed())
				continue
			}
			c.shade(x, y, x+dw, y+p.u(4), 180)
		}
		c.rect(x-c.w/80, base-c.h*2/100, x+dw+c.w/80, base+c.h/60, rgb{40, 40, 40}, 6, p.seed())
		c.rect(x+dw/3, base-c.h*34/100, x+dw*2/3, base-c.h*32/100, rgb{250, 240, 200}, 0, 0)
	}
	c.rect(c.w*2/3, top+c.h/30, c.w*2/3+c.w/8, top+c.h/14, rgb{200, 40, 40}, 4, p.seed()) // sign
}

// room draws an interior: a box in perspective with its contents.
func (p *painter) room() {
	c := p.c
	k := p.sc.kind
	bx0, bx1 := c.w*24/100, c.w*76/100
	by0, by1 := c.h*18/100, c.h*52/100
	if k == garage {
		by0, by1 = c.h*30/100, c.h*50/100
	}
	p.hz = by1
	wallCol := map[sceneKind]rgb{warehouse: {168, 170, 166}, shop: {226, 218, 200}, garage: {150, 150, 146}}[k].scale(p.pal.ambient)
	floorCol := map[sceneKind]rgb{warehouse: {150, 148, 140}, shop: {210, 206, 196}, garage: {120, 120, 118}}[k].scale(p.pal.ambient)
	ceil := wallCol.scale(150)
	c.trapezoid(0, by0, 0, c.w, bx0, bx1, ceil, 6, p.seed())
	c.rect(bx0, by0, bx1, by1, wallCol, 7, p.seed())
	// Side walls: columns narrowing towards the back wall.
	for x := 0; x < bx0; x++ {
		t := x * 256 / bx0
		y0, y1 := by0*t/256, c.h-(c.h-by1)*t/256
		col := wallCol.scale(int32(200 + t/8))
		for y := y0; y < y1; y++ {
			c.set(x, y, col)
			c.set(c.w-1-x, y, col.scale(230))
		}
	}
	// Floor, with tiles in the shop.
	tiles := k == shop
	fs := p.seed()
	for y := by1; y < c.h; y++ {
		t := (y - by1) * 256 / (c.h - by1)
		l, r := bx0-bx0*t/256, bx1+(c.w-bx1)*t/256
		depth := 4096 * 256 / max(1, (y-by1)*256/(c.h-by1)*40+256)
		for x := max(0, l); x < min(c.w, r); x++ {
			col := floorCol
			if tiles {
				u := (x - p.vx) * depth / 4096
				if ((u/64)+(depth/48))&1 == 0 {
					col = col.scale(228)
				}
			}
			n := noise(x, y, fs, 9)
			c.set(x, y, rgb{col.r + n, col.g + n, col.b + n})
		}
	}
	if k == warehouse || k == garage {
		// Painted lanes.
		paint := rgb{226, 190, 40}.scale(p.pal.ambient)
		if k == garage {
			paint = rgb{230, 230, 226}.scale(p.pal.ambient)
		}
		for _, f := range []int{-1, 1} {
			c.trapezoid(by1, c.h, p.vx+f*c.w/12, p.vx+f*c.w/12+p.u(4), p.vx+f*c.w*4/10, p.vx+f*c.w*4/10+p.u(26), paint, 10, p.seed())
		}
	}
	// Ceiling lights.
	for k2 := range 5 {
		y := by0 * (k2 + 1) / 6
		half := (bx0 + (c.w/2-bx0)*(5-k2)/6) / 4
		c.rect(c.w/2-half, y, c.w/2+half, y+max(4, by0/30), rgb{255, 252, 236}, 0, 0)
		if p.sc.light == night {
			c.glow(c.w/2, y+by0/20, half/3, rgb{255, 240, 200}, 70)
		}
	}
	switch k {
	case warehouse:
		p.racks(bx0, bx1, by0, by1)
	case shop:
		p.shelves(bx0, bx1, by0, by1)
	case garage:
		p.pillars(by1)
	}
}

func (p *painter) racks(bx0, bx1, by0, by1 int) {
	c := p.c
	for _, side := range []int{-1, 1} {
		for k := 4; k >= 0; k-- {
			t := 256 - k*50 // 256 = front
			x := c.w/2 + side*(c.w/4+(c.w/4)*t/256)
			yb := by1 + (c.h-by1)*t/320
			hgt := (yb - by0/2) * 3 / 4
			post := p.u(30 * t / 256)
			bw := c.w / 7 * t / 256
			x0 := x
			if side > 0 {
				x0 = x - bw
			}
			c.rect(x0, yb-hgt, x0+post, yb, rgb{220, 110, 30}, 6, p.seed())
			c.rect(x0+bw-post, yb-hgt, x0+bw, yb, rgb{220, 110, 30}, 6, p.seed())
			for lvl := range 4 {
				by := yb - hgt*lvl/4
				c.rect(x0, by-post, x0+bw, by, rgb{30, 70, 150}, 6, p.seed())
				for bxx := x0 + post; bxx < x0+bw-post; {
					boxW := p.r(bw/6, bw/3)
					boxH := p.r(hgt/10, hgt/5)
					col := rgb{int32(p.r(150, 200)), int32(p.r(110, 150)), int32(p.r(70, 100))}.scale(p.pal.ambient)
					c.rect(bxx, by-post-boxH, min(bxx+boxW, x0+bw-post), by-post, col, 12, p.seed())
					c.rect(bxx+boxW/3, by-post-boxH*2/3, bxx+boxW/2, by-post-boxH/2, rgb{240, 240, 240}, 3, p.seed())
					bxx += boxW + p.r(2, bw/20+3)
				}
			}
		}
	}
}

func (p *painter) shelves(bx0, bx1, by0, by1 int) {
	c := p.c
	for _, side := range []int{-1, 1} {
		for k := 3; k >= 0; k-- {
			t := 256 - k*56
			x := c.w/2 + side*(c.w/5+(c.w/4)*t/256)
			yb := by1 + (c.h-by1)*t/330
			hgt := (yb - by0) * 2 / 3
			bw := c.w / 6 * t / 256
			x0 := x
			if side > 0 {
				x0 = x - bw
			}
			c.rect(x0, yb-hgt, x0+bw, yb, rgb{236, 236, 232}, 4, p.seed())
			for lvl := range 5 {
				sy := yb - hgt*lvl/5
				c.rect(x0, sy-max(3, hgt/60), x0+bw, sy, rgb{180, 180, 176}, 4, p.seed())
				for px := x0 + 2; px < x0+bw-2; {
					pw := p.r(bw/20+2, bw/9+3)
					ph := p.r(hgt/12, hgt/6)
					col := rgb{int32(p.r(40, 250)), int32(p.r(40, 250)), int32(p.r(40, 250))}
					c.rect(px, sy-max(3, hgt/60)-ph, min(px+pw, x0+bw-2), sy-max(3, hgt/60), col, 14, p.seed())
					c.rect(px+pw/4, sy-ph*2/3, px+pw*3/4, sy-ph/2, rgb{250, 250, 250}, 2, p.seed())
					px += pw + 1
				}
			}
		}
	}
	// A counter in front.
	c.rect(c.w*58/100, c.h*70/100, c.w*90/100, c.h*86/100, rgb{120, 86, 60}.scale(p.pal.ambient), 10, p.seed())
	c.rect(c.w*58/100, c.h*68/100, c.w*90/100, c.h*70/100, rgb{60, 60, 60}, 6, p.seed())
}

func (p *painter) pillars(by1 int) {
	c := p.c
	for k := 4; k >= 0; k-- {
		t := 256 - k*48
		yb := by1 + (c.h-by1)*t/300
		for _, side := range []int{-1, 1} {
			x := c.w/2 + side*(c.w/8+(c.w/3)*t/256)
			pw := p.u(120 * t / 256)
			c.rect(x-pw/2, 0, x+pw/2, yb, rgb{176, 176, 170}.scale(p.pal.ambient), 9, p.seed())
			c.rect(x-pw/2, yb-pw/2, x+pw/2, yb-pw/3, rgb{230, 200, 40}, 6, p.seed())
			c.shade(x+pw/4, 0, x+pw/2, yb, 190)
		}
	}
}

// objects places cars and people at depths, far ones first.
func (p *painter) objects() {
	c := p.c
	type obj struct {
		y, x int
		car  bool
	}
	var objs []obj
	lo := p.hz + (c.h-p.hz)/10
	for range p.sc.cars {
		y := p.r(lo, c.h*97/100)
		s := p.depthScale(y)
		x := p.r(0, c.w)
		if p.sc.kind == street {
			x = p.vx + (p.r(0, 3)-1)*c.w*s/3072
		}
		objs = append(objs, obj{y, x, true})
	}
	for range p.sc.people {
		y := p.r(lo, c.h*98/100)
		objs = append(objs, obj{y, p.r(c.w/20, c.w*19/20), false})
	}
	sort.SliceStable(objs, func(i, j int) bool { return objs[i].y < objs[j].y })
	for _, o := range objs {
		s := p.depthScale(o.y)
		if o.car {
			p.car(o.x, o.y, s)
		} else {
			p.person(o.x, o.y, s)
		}
	}
}

func (p *painter) car(x, y, s int) {
	c := p.c
	w := 820 * s / 1024
	h := w * 40 / 100
	if w < 8 {
		return
	}
	colors := []rgb{{200, 30, 30}, {230, 230, 232}, {30, 30, 34}, {40, 80, 160}, {150, 152, 156}, {90, 110, 70}, {220, 180, 40}}
	body := colors[p.r(0, len(colors))].scale(p.pal.ambient)
	c.ellipse(x, y, w*6/10, h/6, rgb{12, 12, 12}, 0, 0) // shadow
	c.rect(x-w/2, y-h*55/100, x+w/2, y-h/8, body, 8, p.seed())
	c.trapezoid(y-h, y-h*55/100, x-w*30/100, x+w*28/100, x-w*44/100, x+w*44/100, body.scale(230), 8, p.seed())
	glass := mix(p.pal.skyHorizon, rgb{20, 26, 34}, 170).scale(p.pal.ambient)
	c.trapezoid(y-h*92/100, y-h*58/100, x-w*27/100, x+w*25/100, x-w*39/100, x+w*39/100, glass, 6, p.seed())
	c.rect(x-w/2, y-h*30/100, x+w/2, y-h*26/100, body.scale(170), 4, p.seed()) // trim
	for _, wx := range []int{x - w*30/100, x + w*30/100} {
		c.ellipse(wx, y-h/7, w/10, h/6, rgb{22, 22, 24}, 6, p.seed())
		c.ellipse(wx, y-h/7, w/24, h/14, rgb{150, 150, 154}, 6, p.seed())
	}
	lamp := rgb{250, 246, 220}
	c.rect(x-w/2, y-h*48/100, x-w*42/100, y-h*38/100, lamp, 0, 0)
	c.rect(x+w*42/100, y-h*48/100, x+w/2, y-h*38/100, lamp, 0, 0)
	if p.sc.light == night {
		c.glow(x-w*46/100, y-h*43/100, w/4, rgb{255, 240, 200}, 160)
		c.glow(x+w*46/100, y-h*43/100, w/4, rgb{255, 240, 200}, 160)
	}
}

func (p *painter) person(x, y, s int) {
	c := p.c
	h := 500 * s / 1024
	if h < 10 {
		return
	}
	w := h / 4
	shirts := []rgb{{180, 40, 40}, {40, 70, 150}, {230, 230, 220}, {60, 120, 70}, {240, 180, 40}, {70, 70, 76}, {150, 90, 160}}
	shirt := shirts[p.r(0, len(shirts))].scale(p.pal.ambient)
	pants := []rgb{{40, 50, 80}, {30, 30, 32}, {110, 100, 80}}[p.r(0, 3)].scale(p.pal.ambient)
	skin := []rgb{{236, 196, 164}, {198, 150, 110}, {140, 96, 64}, {96, 64, 44}}[p.r(0, 4)].scale(p.pal.ambient)
	c.ellipse(x+w/3, y, w*7/10, h/28, rgb{16, 16, 16}, 0, 0)
	stride := p.r(-w/4, w/4+1)
	c.rect(x-w/3+stride, y-h*47/100, x-w/24+stride, y, pants, 8, p.seed())
	c.rect(x+w/24-stride, y-h*47/100, x+w/3-stride, y, pants, 8, p.seed())
	c.rect(x-w/2, y-h*80/100, x+w/2, y-h*45/100, shirt, 12, p.seed())
	c.rect(x-w/2-w/6, y-h*78/100, x-w/2, y-h*52/100, shirt.scale(220), 10, p.seed())
	c.rect(x+w/2, y-h*78/100, x+w/2+w/6, y-h*52/100, shirt.scale(220), 10, p.seed())
	c.ellipse(x, y-h*88/100, w*3/10, h/11, skin, 8, p.seed())
	c.ellipse(x, y-h*95/100, w*3/10, h/26, rgb{40, 30, 24}, 6, p.seed()) // hair
}

// atmosphere applies weather, vignette and sensor grain in one pass.
func (p *painter) atmosphere() {
	c := p.c
	s := p.seed()
	cx, cy := c.w/2, c.h/2
	r2 := int64(cx*cx + cy*cy)
	fogCol := rgb{200, 202, 204}
	// The vignette darkens by 70/256 in the corners; its column share is
	// computed once, not divided out per pixel.
	colDark := make([]int32, c.w)
	for x := range colDark {
		dx := int64(x - cx)
		colDark[x] = int32(dx * dx * 70 / r2)
	}
	for y := 0; y < c.h; y++ {
		// Fog is thickest at the horizon, where things are far.
		var fogT int32
		if p.sc.weather == fog {
			d := y - p.hz
			if d < 0 {
				d = -d
			}
			fogT = int32(max(40, 210-d*300/c.h))
		}
		dy := int64(y - cy)
		rowDark := int32(dy * dy * 70 / r2)
		for x := 0; x < c.w; x++ {
			col := c.get(x, y)
			if fogT > 0 {
				col = mix(col, fogCol, fogT)
			}
			v := 256 - rowDark - colDark[x]
			n := noise(x, y, s, 5)
			c.set(x, y, rgb{col.r*v/256 + n, col.g*v/256 + n, col.b*v/256 + n})
		}
	}
	switch p.sc.weather {
	case rain:
		for range 2500 {
			x, y := p.r(0, c.w), p.r(0, c.h)
			l := p.r(c.h/60, c.h/25)
			for k := range l {
				xx, yy := x+k/4, y+k
				if xx < c.w && yy < c.h {
					c.set(xx, yy, mix(c.get(xx, yy), rgb{210, 214, 222}, 90))
				}
			}
		}
	case snow:
		for range 3000 {
			x, y := p.r(0, c.w), p.r(0, c.h)
			r := p.u(p.r(1, 5))
			c.ellipse(x, y, r, r, rgb{246, 248, 250}, 4, p.seed())
		}
	}
}
