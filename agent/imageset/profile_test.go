package imageset

import (
	"bytes"
	"encoding/base64"
	"image"
	"image/jpeg"
	"image/png"
	"strings"
	"testing"

	"github.com/vlmfleet/vlmfleet/protocol"
)

// decodeProfile decodes a profile picture's data URL.
func decodeProfile(t *testing.T, head, tail, format string) image.Image {
	t.Helper()
	url := head + tail
	prefix := "data:image/" + format + ";base64,"
	if !strings.HasPrefix(url, prefix) {
		t.Fatalf("data URL starts %.40q, want %q", url, prefix)
	}
	raw, err := base64.StdEncoding.DecodeString(url[len(prefix):])
	if err != nil {
		t.Fatalf("base64: %v", err)
	}
	var img image.Image
	if format == protocol.ImageFormatPNG {
		img, err = png.Decode(bytes.NewReader(raw))
	} else {
		img, err = jpeg.Decode(bytes.NewReader(raw))
	}
	if err != nil {
		t.Fatalf("decoding the %s: %v", format, err)
	}
	return img
}

func samePixels(a, b image.Image) bool {
	r := a.Bounds()
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			ar, ag, ab, _ := a.At(x, y).RGBA()
			br, bg, bb, _ := b.At(x, y).RGBA()
			if ar != br || ag != bg || ab != bb {
				return false
			}
		}
	}
	return true
}

// A profile picture has the asked size in the asked format at any WxH,
// and two copies never decode to the same pixels.
func TestProfilePictureSizeFormatAndUniqueness(t *testing.T) {
	set, err := Builtin()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		res    protocol.Resolution
		format string
	}{
		{protocol.Resolution{Width: 333, Height: 201}, protocol.ImageFormatPNG},
		{protocol.Resolution{Width: 64, Height: 5}, protocol.ImageFormatPNG},
		{protocol.Resolution{Width: 250, Height: 410}, protocol.ImageFormatJPEG},
	} {
		h1, t1, err := set.ProfilePicture(tc.res, tc.format, 0, 7)
		if err != nil {
			t.Fatalf("%s %s: %v", tc.res, tc.format, err)
		}
		h2, t2, err := set.ProfilePicture(tc.res, tc.format, 0, 8)
		if err != nil {
			t.Fatal(err)
		}
		a, b := decodeProfile(t, h1, t1, tc.format), decodeProfile(t, h2, t2, tc.format)
		if got := a.Bounds().Size(); got.X != tc.res.Width || got.Y != tc.res.Height {
			t.Errorf("%s %s: decoded %v", tc.res, tc.format, got)
		}
		if samePixels(a, b) {
			t.Errorf("%s %s: two copies decode to the same pixels", tc.res, tc.format)
		}
	}
	if _, _, err := set.ProfilePicture(protocol.Resolution{Width: 10, Height: 10}, "gif", 0, 1); err == nil ||
		!strings.Contains(err.Error(), "gif") {
		t.Errorf("format gif: err = %v, want one naming it", err)
	}
}
