// Package termprogress draws one progress line per active item: redrawn in
// place on a terminal, or a plain line now and then when the output is a
// log file or a pipe.
package termprogress

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
)

const (
	barWidth = 24
	// ttyEvery limits redraws on a terminal; a bar that ends is drawn at once.
	ttyEvery = 100 * time.Millisecond
	// PlainEvery is how often an item's plain line is repeated when not on a
	// terminal, so that logs show progress without a line per request.
	PlainEvery = 5 * time.Second
)

type item struct {
	id, label   string
	done, total int
	suffix      string
	finished    bool
	lastPlain   time.Time
	plainShown  string // the last plain line written, to skip repeats
	ttyFinished bool   // written for good above the live lines
}

// Bars is a set of progress lines. It is safe for concurrent use.
type Bars struct {
	mu       sync.Mutex
	w        io.Writer
	tty      bool
	items    []*item
	lines    int // live lines drawn last time (tty)
	lastDraw time.Time
	closed   bool
	now      func() time.Time
}

// New returns bars writing to w; tty says whether w is a terminal.
func New(w io.Writer, tty bool) *Bars {
	return &Bars{w: w, tty: tty, now: time.Now}
}

// Set creates or updates the item id. total <= 0 shows a count without a bar.
func (b *Bars) Set(id, label string, done, total int, suffix string) {
	b.whileOpen(func() {
		it := b.find(id)
		if it == nil {
			it = &item{id: id}
			b.items = append(b.items, it)
		}
		it.label, it.done, it.total, it.suffix = label, done, total, suffix
		complete := total > 0 && done >= total
		now := b.now()
		if b.tty {
			if complete || now.Sub(b.lastDraw) >= ttyEvery {
				b.redraw(now)
			}
			return
		}
		if complete || it.lastPlain.IsZero() || now.Sub(it.lastPlain) >= PlainEvery {
			b.plain(it, now)
		}
	})
}

// Finish draws the item's last state for good and stops tracking it.
func (b *Bars) Finish(id string) {
	b.whileOpen(func() {
		it := b.find(id)
		if it == nil {
			return
		}
		it.finished = true
		if b.tty {
			b.redraw(b.now())
		} else {
			b.plain(it, b.now())
		}
		b.drop()
	})
}

// Close finishes every item; later calls do nothing.
func (b *Bars) Close() {
	b.whileOpen(func() {
		for _, it := range b.items {
			it.finished = true
			if !b.tty {
				b.plain(it, b.now())
			}
		}
		if b.tty {
			b.redraw(b.now())
		}
		b.drop()
		b.closed = true
	})
}

// whileOpen runs f holding the lock, unless the bars are closed.
func (b *Bars) whileOpen(f func()) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.closed {
		f()
	}
}

func (b *Bars) find(id string) *item {
	for _, it := range b.items {
		if it.id == id {
			return it
		}
	}
	return nil
}

// drop forgets the items that have been written for good.
func (b *Bars) drop() {
	kept := b.items[:0]
	for _, it := range b.items {
		if !it.finished {
			kept = append(kept, it)
		}
	}
	b.items = kept
}

func (b *Bars) plain(it *item, now time.Time) {
	line := render(it, false)
	if line == it.plainShown {
		return
	}
	it.plainShown, it.lastPlain = line, now
	fmt.Fprintln(b.w, line)
}

// redraw moves up over the live lines, writes finished items once (they
// scroll away with the output) and the live ones below them.
func (b *Bars) redraw(now time.Time) {
	var sb strings.Builder
	if b.lines > 0 {
		fmt.Fprintf(&sb, "\x1b[%dA", b.lines)
	}
	live := 0
	for _, it := range b.items {
		if it.finished {
			if it.ttyFinished {
				continue
			}
			it.ttyFinished = true
		} else {
			live++
		}
		sb.WriteString("\r\x1b[2K")
		sb.WriteString(render(it, true))
		sb.WriteByte('\n')
	}
	sb.WriteString("\x1b[J")
	b.lines = live
	b.lastDraw = now
	_, _ = io.WriteString(b.w, sb.String())
}

func render(it *item, bar bool) string {
	var sb strings.Builder
	sb.WriteString(it.label)
	if it.total > 0 {
		done := min(max(it.done, 0), it.total)
		if bar {
			fill := done * barWidth / it.total
			sb.WriteString(" [")
			sb.WriteString(strings.Repeat("#", fill))
			sb.WriteString(strings.Repeat("-", barWidth-fill))
			sb.WriteString("]")
		}
		fmt.Fprintf(&sb, " %d/%d", it.done, it.total)
	} else if it.done > 0 {
		// A count without a total; nothing counted yet is not "0".
		fmt.Fprintf(&sb, " %d", it.done)
	}
	if it.suffix != "" {
		sb.WriteByte(' ')
		sb.WriteString(it.suffix)
	}
	return sb.String()
}
