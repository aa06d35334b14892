package simengine

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
)

// The JSON decoder reads about 100 MB/s: a 720p photo in base64 costs it a
// few milliseconds, which a server sped up 40 times turns into a hundred
// simulated ones, as long as a whole prefill on a fast GPU. cutBlobs takes
// the long data URLs out of the body before it is decoded (memchr-speed
// scanning), leaving a short placeholder that blobs.resolve puts back.

// blobMin is the shortest string literal worth taking out.
const blobMin = 4096

// blobMark starts a placeholder: a NUL, which no client string can hold
// unless it is written as \u0000, and bodies that contain that escape are
// left whole.
const blobMark = "\x00"

type blobs []string

// cutBlobs returns body with every long data URL string literal that has no
// escapes replaced by a placeholder, and the literals taken out. A body that
// is not well-formed is returned as it is, for the decoder to refuse.
func cutBlobs(body []byte) ([]byte, blobs) {
	if bytes.Contains(body, []byte(`\u0000`)) {
		return body, nil
	}
	var out []byte
	var bl blobs
	last := 0 // body[:last] is in out
	for pos := 0; pos < len(body); {
		q := bytes.IndexByte(body[pos:], '"')
		if q < 0 {
			break
		}
		q += pos
		e, ok := stringEnd(body, q)
		if !ok {
			return body, nil
		}
		lit := body[q+1 : e]
		if len(lit) >= blobMin && bytes.HasPrefix(lit, []byte("data:")) && bytes.IndexByte(lit, '\\') < 0 && !hasControl(lit) {
			out = append(out, body[last:q+1]...)
			out = append(out, `\u0000`...)
			out = strconv.AppendInt(out, int64(len(bl)), 10)
			bl = append(bl, string(lit))
			last = e
		}
		pos = e + 1
	}
	if bl == nil {
		return body, nil
	}
	return append(out, body[last:]...), bl
}

// stringEnd is the index of the quote that ends the string literal opening
// at body[q].
func stringEnd(body []byte, q int) (int, bool) {
	for e := q + 1; ; {
		k := bytes.IndexByte(body[e:], '"')
		if k < 0 {
			return 0, false
		}
		k += e
		n := 0
		for i := k - 1; i > q && body[i] == '\\'; i-- {
			n++
		}
		if n%2 == 0 {
			return k, true
		}
		e = k + 1
	}
}

// hasControl says whether b holds a byte JSON forbids raw in a string; of
// those a base64 decoder would skip only line breaks, so only they are
// looked for.
func hasControl(b []byte) bool {
	return bytes.IndexByte(b, '\n') >= 0 || bytes.IndexByte(b, '\r') >= 0
}

// resolve turns a placeholder back into the string it stands for.
func (bl blobs) resolve(s string) string {
	rest, ok := strings.CutPrefix(s, blobMark)
	if !ok {
		return s
	}
	i, err := strconv.Atoi(rest)
	if err != nil || i < 0 || i >= len(bl) {
		return s
	}
	return bl[i]
}

// text resolves a string used as text: a blob must then hold no control
// character, as the decoder would have refused one.
func (bl blobs) text(s string) (string, error) {
	t := bl.resolve(s)
	if t == s {
		return s, nil
	}
	for i := range len(t) {
		if t[i] < 0x20 {
			return "", fmt.Errorf("invalid character %q in string literal", t[i])
		}
	}
	return t, nil
}
