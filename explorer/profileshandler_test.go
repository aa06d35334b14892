package explorer

import (
	"context"
	"errors"
	"math"
	"net/http"
	"strings"
	"testing"

	"github.com/vlmfleet/vlmfleet/explorer/profiles"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// profileRuns is a store that also keeps measured profile lines.
type profileRuns struct {
	runList
	lines []protocol.ProfileRow
	err   error
}

func (p profileRuns) ProfileRows(context.Context) ([]protocol.ProfileRow, error) {
	return p.lines, p.err
}

func TestHandlerProfilesPublished(t *testing.T) {
	srv := serve(t, runList{runs: handlerRuns()})
	var all protocol.ProfileRows
	if code, body := get(t, srv, "GET", PathProfiles, &all); code != http.StatusOK {
		t.Fatalf("GET %s: %d %s", PathProfiles, code, body)
	}
	if len(all.Rows) != 65 {
		t.Fatalf("%d rows, want the seed's 65 published lines", len(all.Rows))
	}
	for i, r := range all.Rows {
		if r.Source != protocol.ProfileSourcePublished || r.Note != profiles.PublishedNote || r.Validate() != nil {
			t.Fatalf("rows[%d]: %+v (%v), want a valid published line", i, r, r.Validate())
		}
	}
	_, body := get(t, srv, "GET", PathProfiles, nil)
	if _, err := protocol.DecodeProfileRows([]byte(body)); err != nil {
		t.Errorf("the answer does not decode as the wire type: %v", err)
	}
	var some protocol.ProfileRows
	if code, body := get(t, srv, "GET", PathProfiles+"?model=90b&gpu=a100&precision=bf16&tp=8&profile=max_throughput", &some); code != http.StatusOK || len(some.Rows) != 3 {
		t.Fatalf("filtered: %d, %d rows, want 3: %s", code, len(some.Rows), body)
	}
	if r := some.Rows[2]; *r.ISL != 60000 || *r.ITLMs != 114.8 || *r.RequestThroughput != 0.04 || r.TTFTMs != nil || r.Concurrency != nil {
		t.Errorf("the last line: %+v, want ISL 60000, ITL 114.8, 0.04 req/s, no TTFT, no concurrency", r)
	}
}

func TestHandlerProfilesBadParameters(t *testing.T) {
	srv := serve(t, runList{runs: handlerRuns()})
	for q, want := range map[string]string{
		"?tp=x":         "tp: ",
		"?profile=best": "profile: ",
		"?gpu=":         "gpu: empty",
		"?cameras=4":    `unknown parameter \"cameras\"`,
	} {
		code, body := get(t, srv, "GET", PathProfiles+q, nil)
		if code != http.StatusBadRequest || !strings.Contains(body, want) {
			t.Errorf("%s: %d %s, want 400 naming %q", q, code, body, want)
		}
	}
	if code, _ := get(t, srv, "POST", PathProfiles, nil); code != http.StatusMethodNotAllowed {
		t.Errorf("POST %s: %d, want 405", PathProfiles, code)
	}
}

// A store's measured line comes back after the published line of its
// identity; a store that fails is a 500 naming why.
func TestHandlerProfilesJoinsMeasuredLines(t *testing.T) {
	published, err := profiles.Published()
	if err != nil {
		t.Fatal(err)
	}
	m := published[1] // H100 FP8 TP1, max throughput, ISL 1000 OSL 1000
	m.Source, m.Note, m.Engine, m.Simulated = protocol.ProfileSourceMeasured, "", "vLLM", true
	conc, tput := 16, 2.448
	m.Concurrency, m.RequestThroughput = &conc, &tput
	srv := serve(t, profileRuns{runList: runList{runs: handlerRuns()}, lines: []protocol.ProfileRow{m}})
	var res protocol.ProfileRows
	if code, body := get(t, srv, "GET", PathProfiles+"?profile=max_throughput&precision=FP8&tp=1", &res); code != http.StatusOK {
		t.Fatalf("%d %s", code, body)
	}
	if len(res.Rows) != 2 || res.Rows[0].Source != protocol.ProfileSourcePublished || res.Rows[1].Source != protocol.ProfileSourceMeasured {
		t.Fatalf("%+v, want the published line then the measured one", res.Rows)
	}
	lines := profiles.Join(res.Rows[:1], res.Rows[1:])
	if d := lines[0].Diff().RequestThroughput; len(lines) != 1 || d == nil || math.Abs(*d-(-10)) > 1e-9 {
		t.Errorf("the measured line against the published: %v %%, want -10 %%", d)
	}
	srv = serve(t, profileRuns{runList: runList{runs: handlerRuns()}, err: errors.New("bucket gone")})
	if code, body := get(t, srv, "GET", PathProfiles, nil); code != http.StatusInternalServerError || !strings.Contains(body, "bucket gone") {
		t.Errorf("a failing store: %d %s, want 500 naming it", code, body)
	}
}
