package protocol

import (
	"bytes"
	"encoding/binary"
	"reflect"
	"strings"
	"testing"
)

func TestCompressedPayloads(t *testing.T) {
	m := resultWithSeries(12)
	js := []byte(mustJSON(t, m))
	c := CompressPayload(js)
	if !IsCompressed(c) || IsCompressed(js) || len(c) >= len(js)/2 {
		t.Fatalf("compressed %d bytes of JSON to %d (compressed %v)", len(js), len(c), IsCompressed(c))
	}
	if back, err := Uncompress(c); err != nil || !bytes.Equal(back, js) {
		t.Fatalf("uncompressed: %v", err)
	}
	if back, err := Uncompress(js); err != nil || !bytes.Equal(back, js) {
		t.Fatalf("JSON is its own payload: %v", err)
	}
	plain, err := DecodeReceivedResult(js, nil)
	if err != nil {
		t.Fatal(err)
	}
	packed, err := DecodeReceivedResult(c, nil)
	if err != nil || !reflect.DeepEqual(packed, plain) {
		t.Errorf("a compressed message decodes as %+v (%v), want %+v", packed, err, plain)
	}
	// What says it would be larger than a message may be is refused before
	// anything is made for it, and a damaged block is refused.
	bomb := append(append([]byte{}, payloadS2Magic...), binary.AppendUvarint(nil, MaxMessageBytes+1)...)
	if _, err := Uncompress(bomb); err == nil || !strings.Contains(err.Error(), "more than the") {
		t.Errorf("a payload of more than a message once uncompressed: %v", err)
	}
	damaged := append([]byte{}, c[:len(c)/2]...)
	if _, err := DecodeReceivedResult(damaged, nil); err == nil || !strings.Contains(err.Error(), "compressed payload") {
		t.Errorf("a damaged compressed message: %v", err)
	}
}
