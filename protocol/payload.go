package protocol

import (
	"bytes"
	"fmt"

	"github.com/klauspost/compress/s2"
)

// EncodingS2 names the compression of result messages that a controller
// takes (Drain.Encodings): an S2 block of the message's JSON after
// payloadS2Magic. A result message is mostly its telemetry series and
// request records, JSON that S2 takes to about a third: compressed, it
// costs the link, JetStream's store and every copy on the way a third of
// what it did, which was most of what taking in a result cost.
const EncodingS2 = "s2"

// payloadS2Magic starts a compressed payload. JSON never starts with a
// zero byte, so a payload is compressed or JSON by its first bytes.
const payloadS2Magic = "\x00s2\x01"

// CompressPayload is a message's JSON as an agent sends it to a
// controller that takes EncodingS2.
func CompressPayload(js []byte) []byte {
	out := make([]byte, len(payloadS2Magic)+s2.MaxEncodedLen(len(js)))
	n := copy(out, payloadS2Magic)
	return out[:n+len(s2.Encode(out[n:], js))]
}

// IsCompressed reports whether a payload is compressed (CompressPayload).
func IsCompressed(data []byte) bool { return bytes.HasPrefix(data, []byte(payloadS2Magic)) }

// Uncompress is a payload's JSON: data itself when it is not compressed.
// What it gives back is at most MaxMessageBytes, checked before it is made.
func Uncompress(data []byte) ([]byte, error) {
	if !IsCompressed(data) {
		return data, nil
	}
	block := data[len(payloadS2Magic):]
	n, err := s2.DecodedLen(block)
	if err != nil {
		return nil, fmt.Errorf("compressed payload: %w", err)
	}
	if n > MaxMessageBytes {
		return nil, fmt.Errorf("compressed payload: %d bytes once uncompressed, more than the %d allowed", n, MaxMessageBytes)
	}
	js, err := s2.Decode(make([]byte, n), block)
	if err != nil {
		return nil, fmt.Errorf("compressed payload: %w", err)
	}
	return js, nil
}
