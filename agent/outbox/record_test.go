package outbox

import (
	"bytes"
	"errors"
	"testing"
)

func TestRecordRoundTrip(t *testing.T) {
	r := record{subject: "vlmfleet.agent.a1.state", msgID: "state.j1.accepted.1", data: []byte(`{"x":1}`)}
	b, err := encodeRecord(r)
	if err != nil {
		t.Fatal(err)
	}
	got, err := decodeRecord(b)
	if err != nil || got.subject != r.subject || got.msgID != r.msgID || !bytes.Equal(got.data, r.data) {
		t.Fatalf("decode(encode(r)) = %+v, %v", got, err)
	}
	for n := range len(b) {
		if _, err := decodeRecord(b[:n]); !errors.Is(err, errTorn) {
			t.Errorf("cut at %d of %d bytes: %v, want errTorn", n, len(b), err)
		}
	}
	b[len(b)-6] ^= 1
	if _, err := decodeRecord(b); err == nil {
		t.Error("a changed byte decoded")
	}
}

// FuzzDecodeRecord: whatever a spool file holds, decoding it returns a
// record or an error, never panics, and what decodes encodes to the same
// bytes.
func FuzzDecodeRecord(f *testing.F) {
	b, _ := encodeRecord(record{subject: "s", msgID: "m", data: []byte("d")})
	f.Add(b)
	f.Add(b[:9])
	f.Add([]byte("VOB1"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, in []byte) {
		r, err := decodeRecord(in)
		if err != nil {
			return
		}
		out, err := encodeRecord(r)
		if err != nil {
			t.Fatalf("a decoded record does not encode: %v", err)
		}
		if !bytes.Equal(out, in) {
			t.Fatalf("re-encoded %x, read %x", out, in)
		}
	})
}
