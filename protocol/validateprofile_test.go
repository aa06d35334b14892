package protocol

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/vlmfleet/vlmfleet/internal/testutil"
)

// profileRun is a profile run of one level, as the agent sends it.
func profileRun() Run {
	r := sampleRun()
	r.Workload = DefaultProfileWorkload()
	ttft, itl := 198.0, 7.4
	r.Combinations = []Combination{{
		ComboKey: ComboKey{Size: "1120x1120", Images: 1, Cameras: 1, ISL: 1000, OSL: 1000}, Width: 1120, Height: 1120,
		Completed: 10, TTFT: Stats{N: 10, Mean: 0.198},
		Profile: &ProfileLevel{LengthPair: LengthPair{ISL: 1000, OSL: 1000}, Resolution: Resolution{Width: 1120, Height: 1120},
			ImageFormat: ImageFormatJPEG, Concurrency: 1, Stream: true, TTFTMs: &ttft, ITLMs: &itl, RequestLatencyMs: 7598,
			RequestThroughput: 0.13, OSLHeld: true, OSLMean: 1000},
	}}
	return r
}

// A stored profile level is keyed by its pictures' WxH and its lengths,
// which must agree with its figures; a camera level keeps the named sizes.
func TestProfileLevelsValidateAgainstTheirFigures(t *testing.T) {
	good, err := json.Marshal(profileRun())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := DecodeRun(good); err != nil {
		t.Fatalf("a profile run of the seed's first line: %v", err)
	}
	cases := map[string]struct{ from, to, want string }{
		"size":        {`"size":"1120x1120"`, `"size":"1120"`, `size: image size "1120"`},
		"other size":  {`"size":"1120x1120"`, `"size":"560x560"`, "size 560x560, but the profile's figures are of 1120x1120 pictures"},
		"lengths":     {`"osl":1000,"width"`, `"osl":999,"width"`, "isl/osl 1000/999, but the profile's figures are of 1000/1000"},
		"concurrency": {`"concurrency":1`, `"concurrency":2`, "concurrency 2, but the level's key says 1"},
		"latency":     {`"request_latency_ms":7598`, `"request_latency_ms":-1`, "profile.request_latency_ms: -1"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			doc := strings.Replace(string(good), tc.from, tc.to, 1)
			if doc == string(good) {
				t.Fatalf("%s not in the document", tc.from)
			}
			_, err := DecodeRun([]byte(doc))
			testutil.WantError(t, err, tc.want)
		})
	}
	camera, _ := json.Marshal(sampleRun())
	withLengths := strings.Replace(string(camera), `"cameras":1`, `"cameras":1,"isl":10,"osl":10`, 1)
	_, err = DecodeRun([]byte(withLengths))
	testutil.WantError(t, err, "isl and osl on a camera level")
}
