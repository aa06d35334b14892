package received_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/vlmfleet/vlmfleet/controller/received"
	"github.com/vlmfleet/vlmfleet/harness/ingestload"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// BenchmarkDecodeReceivedResult is the controller's decoding of a result
// message as agents send it (compressed), at the sizes of the ingest
// benchmarks (TestMeasureIngest, TestCapacity): the CPU a message costs
// there before it is stored.
func BenchmarkDecodeReceivedResult(b *testing.B) {
	for _, shape := range []ingestload.Shape{{}, {Records: 80, Seconds: 30}} {
		runs := []protocol.Run{ingestload.Header("r1", "j1", "s1", "a1", time.Date(2026, 12, 2, 1, 0, 0, 0, time.UTC))}
		msgs, err := ingestload.Build(runs, 256, 0, shape)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("%drecords-%dsamples", len(mustDecode(b, msgs[0].Data).Combination.Requests), shape.Samples()), func(b *testing.B) {
			headers := received.NewHeaderCache(16)
			b.SetBytes(int64(len(msgs[0].JSON)))
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				if _, err := received.Decode(msgs[i%len(msgs)].Data, headers); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func mustDecode(b *testing.B, data []byte) *received.Result {
	m, err := received.Decode(data, nil)
	if err != nil {
		b.Fatal(err)
	}
	return m
}
