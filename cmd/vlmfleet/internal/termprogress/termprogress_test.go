package termprogress

import (
	"bytes"
	"github.com/vlmfleet/vlmfleet/protocol"
	"strings"
	"sync"
	"testing"
	"time"
)

type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func newTest(tty bool) (*Bars, *bytes.Buffer, *clock) {
	var buf bytes.Buffer
	c := &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	b := New(&buf, tty)
	b.now = c.now
	return b, &buf, c
}

func TestPlainLinesAreThrottledAndCompletionShown(t *testing.T) {
	b, buf, c := newTest(false)
	b.Set("a", "720p-1img-4cam", 0, 8, "")
	for i := 1; i < 8; i++ {
		c.t = c.t.Add(time.Second)
		b.Set("a", "720p-1img-4cam", i, 8, "TTFT 1.20s")
	}
	b.Set("a", "720p-1img-4cam", 8, 8, "TTFT 1.25s")
	b.Finish("a")
	want := "720p-1img-4cam 0/8\n720p-1img-4cam 5/8 TTFT 1.20s\n720p-1img-4cam 8/8 TTFT 1.25s\n"
	if buf.String() != want {
		t.Errorf("got\n%q\nwant\n%q", buf.String(), want)
	}
	if strings.Contains(buf.String(), "\x1b") || strings.Contains(buf.String(), "\r") {
		t.Error("plain output must not carry terminal controls")
	}
}

func TestTTYRedrawsInPlace(t *testing.T) {
	b, buf, c := newTest(true)
	b.Set("a", "A", 1, 4, "")
	c.t = c.t.Add(200 * time.Millisecond)
	b.Set("b", "B", 0, 0, "waiting")
	first := buf.String()
	if !strings.Contains(first, "A [######------------------] 1/4\n") || !strings.Contains(first, "\x1b[1A") || !strings.Contains(first, "B waiting\n") {
		t.Fatalf("first draws %q", first)
	}
	buf.Reset()
	c.t = c.t.Add(10 * time.Millisecond)
	b.Set("a", "A", 2, 4, "") // too soon: not drawn
	if buf.Len() != 0 {
		t.Errorf("redrew within %s: %q", ttyEvery, buf.String())
	}
	b.Set("a", "A", 4, 4, "") // complete: drawn at once
	if got := buf.String(); !strings.HasPrefix(got, "\x1b[2A\r\x1b[2KA [########################] 4/4\n") {
		t.Errorf("completion draw %q", got)
	}
	buf.Reset()
	b.Finish("a")
	b.Close()
	out := buf.String()
	if strings.Count(out, "A [") != 1 || strings.Count(out, "B waiting") != 2 {
		t.Errorf("finish and close %q", out)
	}
	buf.Reset()
	b.Set("c", "C", 1, 2, "")
	b.Close()
	if buf.Len() != 0 {
		t.Errorf("wrote after Close: %q", buf.String())
	}
}

func TestConcurrentUse(t *testing.T) {
	var buf bytes.Buffer
	b := New(&buf, true)
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := string(rune('a' + g))
			for i := 0; i <= 50; i++ {
				b.Set(id, id, i, 50, "")
			}
			b.Finish(id)
		}()
	}
	wg.Wait()
	b.Close()
	for g := 0; g < 8; g++ {
		if !strings.Contains(buf.String(), string(rune('a'+g))+" [########################] 50/50") {
			t.Errorf("item %c never drawn complete", 'a'+g)
		}
	}
}

// TestProgressLinesReadAsSentences: the phases of a job read as words, with
// no count where nothing is counted ("starting vLLM", not "starting
// engine 0 starting vLLM"; "warm-up", not "warm-up 0"; "done", not "done 1/1").
func TestProgressLinesReadAsSentences(t *testing.T) {
	b, buf, _ := newTest(false)
	combo := protocol.ComboKey{Size: "720p", Images: 1, Cameras: 2}
	for _, p := range []protocol.Progress{
		{Phase: protocol.PhaseEngineStart, Message: "starting vLLM"},
		{Phase: protocol.PhaseWarmup, Combo: combo, ComboIdx: 1, ComboN: 3},
		{Phase: protocol.PhaseMeasure, Combo: combo, ComboIdx: 1, ComboN: 3, Done: 2, Total: 2, MeanTTFT: 1.5},
		{Phase: protocol.PhaseDone},
	} {
		b.Progress("j2", "a1 d1", p)
	}
	want := "a1 d1 starting vLLM\na1 d1 [2/3] 720p-1img-2cam warm-up\na1 d1 [2/3] 720p-1img-2cam 2/2 TTFT 1.50 s\na1 d1 done\n"
	if buf.String() != want {
		t.Errorf("got\n%s\nwant\n%s", buf.String(), want)
	}
}
