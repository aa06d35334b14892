package profiles

import (
	"net/url"
	"strings"
	"testing"

	"github.com/vlmfleet/vlmfleet/protocol"
)

func TestParseFilterNamesTheParameter(t *testing.T) {
	for q, want := range map[string]string{
		"tp=0":                                  "tp: \"0\", want a whole number 1..1024",
		"tp=two":                                "tp: \"two\"",
		"profile=fastest":                       "profile: \"fastest\", want min_latency or max_throughput",
		"model=":                                "model: empty",
		"gpu=a&gpu=b":                           "gpu: given 2 times",
		"size=720p":                             "unknown parameter \"size\": the filters are model, gpu, precision",
		"precision=" + strings.Repeat("x", 201): "precision: 201 bytes",
		"source=nvidia":                         "source: \"nvidia\", want published or measured",
	} {
		v, _ := url.ParseQuery(q)
		if _, err := ParseFilter(v); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("?%.40s: %v, want %q", q, err, want)
		}
	}
}

func TestFilterKeepsTheLinesAsked(t *testing.T) {
	published, err := Published()
	if err != nil {
		t.Fatal(err)
	}
	for q, want := range map[string]int{
		"":                        65,
		"model=90b":               21,
		"model=90B&gpu=a100&tp=8": 6,
		"precision=fp8":           7,
		"profile=max_throughput":  32,
		"model=nemoretriever&profile=min_latency&gpu=L40S": 4,
		"gpu=H200":         0,
		"source=published": 65,
		"source=measured":  0,
	} {
		v, _ := url.ParseQuery(q)
		f, err := ParseFilter(v)
		if err != nil {
			t.Fatalf("?%s: %v", q, err)
		}
		if got := f.Apply(published); len(got) != want {
			t.Errorf("?%s: %d lines, want %d", q, len(got), want)
		}
		again, err := ParseFilter(f.Values())
		if err != nil || again != f {
			t.Errorf("?%s: the filter as parameters reads back as %+v, %v; want %+v", q, again, err, f)
		}
	}
	if rows := (Filter{Profile: protocol.ProfileMinLatency}).Apply(nil); rows == nil {
		t.Error("no lines: nil, want an empty list (JSON [])")
	}
}
