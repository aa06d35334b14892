package store_test

import (
	"testing"
	"time"

	"github.com/vlmfleet/vlmfleet/controller/received"
	"github.com/vlmfleet/vlmfleet/controller/store"
	"github.com/vlmfleet/vlmfleet/harness/ingestload"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// BenchmarkPrepare is the encoding of a decoded result message's
// records for the store (the CPU a message costs there besides decoding
// and the transaction), at the sizes of the ingest benchmarks.
func BenchmarkPrepare(b *testing.B) {
	runs := []protocol.Run{ingestload.Header("r1", "j1", "s1", "a1", time.Date(2026, 12, 2, 1, 0, 0, 0, time.UTC))}
	msgs, err := ingestload.Build(runs, 64, 0, ingestload.Shape{})
	if err != nil {
		b.Fatal(err)
	}
	var decoded []*received.Result
	for _, m := range msgs {
		r, err := received.Decode(m.Data, nil)
		if err != nil {
			b.Fatal(err)
		}
		decoded = append(decoded, r)
	}
	b.SetBytes(int64(len(msgs[0].JSON)))
	b.ReportAllocs()
	var prep store.Preparer
	for i := 0; b.Loop(); i++ {
		if _, err := prep.Prepare(decoded[i%len(decoded)]); err != nil {
			b.Fatal(err)
		}
	}
}
