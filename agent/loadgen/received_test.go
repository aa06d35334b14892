package loadgen_test

import (
	"bytes"
	"image/jpeg"
	"testing"
	"time"

	"github.com/vlmfleet/vlmfleet/agent/imageset"
)

func TestScratchTiming(t *testing.T) {
	s, _ := imageset.Builtin()
	for _, sz := range []string{"480p", "720p", "1080p", "2K"} {
		t0 := time.Now()
		b, _ := s.JPEG(sz, 0)
		t1 := time.Now()
		for range 4 {
			jpeg.Decode(bytes.NewReader(b))
		}
		t2 := time.Now()
		u, _ := s.UniqueDataURLs(sz, 0, 4, 1)
		_ = u
		t.Logf("%s: encode set %v, decode %v each, unique %v each, %d bytes", sz, t1.Sub(t0), t2.Sub(t1)/4, time.Since(t2)/4, len(b))
	}
}
