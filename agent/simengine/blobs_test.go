package simengine

import (
	"bytes"
	"image"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

// sameAsDecoder checks that cutting the blobs out changes nothing the
// decoder alone would have made of the body.
func sameAsDecoder(t *testing.T, body []byte) {
	t.Helper()
	fast, ferr := parseRequest(body)
	slow, serr := parseBody(body, nil)
	if (ferr == nil) != (serr == nil) {
		t.Fatalf("with blobs cut: %v; decoder alone: %v", ferr, serr)
	}
	if ferr != nil {
		return
	}
	if !utf8.Valid(body) {
		// The decoder turns invalid UTF-8 into U+FFFD: longer text.
		fast.textTokens, slow.textTokens = 0, 0
	}
	if !reflect.DeepEqual(fast, slow) {
		t.Fatalf("with blobs cut %+v, decoder alone %+v", fast, slow)
	}
}

func TestCutBlobs(t *testing.T) {
	img := jpegURL(t, 1280, 720)
	long := "data:" + strings.Repeat("x", blobMin)
	cases := map[string][]byte{
		"one image":        chatBody("m", true, 16, img),
		"three images":     chatBody("m", true, 16, img, img, img),
		"escaped slashes":  bytes.ReplaceAll(chatBody("m", true, 16, img), []byte("/"), []byte(`\/`)),
		"string image_url": []byte(`{"messages":[{"role":"user","content":[{"type":"image_url","image_url":"` + img + `"}]}]}`),
		"long data text":   []byte(`{"messages":[{"role":"user","content":"` + long + `"}]}`),
		"data text part":   []byte(`{"messages":[{"role":"user","content":[{"type":"text","text":"` + long + `"}]}]}`),
		"tab in data text": []byte(`{"messages":[{"role":"user","content":"` + long + "\t" + `"}]}`),
		"newline in image": []byte(`{"messages":[{"role":"user","content":[{"type":"image_url","image_url":"` + img[:len(img)/2] + "\n" + img[len(img)/2:] + `"}]}]}`),
		"NUL escape":       []byte(`{"model":"\u00000","messages":[{"role":"user","content":[{"type":"image_url","image_url":"` + img + `"}]}]}`),
		"data model name":  []byte(`{"model":"` + long + `","messages":[{"content":"hi"}]}`),
		"unterminated":     []byte(`{"messages":[{"content":"` + long),
		"quote in text":    []byte(`{"messages":[{"content":"say \"` + long + `\" now"}]}`),
	}
	for name, body := range cases {
		t.Run(name, func(t *testing.T) { sameAsDecoder(t, body) })
	}
	cut, bl := cutBlobs(chatBody("m", true, 16, img, img))
	if len(bl) != 2 || len(cut) > 1024 {
		t.Errorf("two images: %d blobs taken out, %d bytes left", len(bl), len(cut))
	}
	if r, err := parseRequest(cases["three images"]); err != nil || len(r.images) != 3 || r.images[0] != image.Pt(1280, 720) {
		t.Errorf("three images parsed as %+v, %v", r, err)
	}
}

func FuzzCutBlobs(f *testing.F) {
	img := jpegURL(f, 64, 36)
	pad := strings.Repeat("A", blobMin)
	f.Add(chatBody("m", true, 16, img+pad))
	f.Add([]byte(`{"messages":[{"content":"data:` + pad + `"}]}`))
	f.Add([]byte(`{"messages":[{"content":"\"data:` + pad + `\""}]}`))
	f.Add([]byte(`{"messages":[{"content":"data:` + pad + "\x01" + `"}]}`))
	f.Fuzz(func(t *testing.T, body []byte) { sameAsDecoder(t, body) })
}
