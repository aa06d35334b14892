package telemetry

import (
	"testing"

	"github.com/vlmfleet/vlmfleet/agent/devicefacts/fakehw"
	"github.com/vlmfleet/vlmfleet/protocol"
)

func BenchmarkParseTegrastats(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseTegrastats(fakehw.AGXOrinLine); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkTegrastatsParser is the sampler's path: patterns compiled once.
func BenchmarkTegrastatsParser(b *testing.B) {
	p := newTegrastatsParser()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := p.parse(fakehw.AGXOrinLine); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkParseNvidiaSMI(b *testing.B) {
	fields, line := smiLine()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseNvidiaSMI(fields, line); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkSummarize(b *testing.B) {
	samples := make([]protocol.TelemetrySample, 3600)
	for i := range samples {
		samples[i] = protocol.TelemetrySample{GPUUtil: f64(float64(i % 100)), PowerW: f64(200), TempC: f64(60), MemUsedMB: f64(1000)}
	}
	b.ReportAllocs()
	for b.Loop() {
		Summarize(samples, SourceNvidiaSMI)
	}
}
