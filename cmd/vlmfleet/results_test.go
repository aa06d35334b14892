package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/vlmfleet/vlmfleet/controller"
	"github.com/vlmfleet/vlmfleet/controller/api"
	"github.com/vlmfleet/vlmfleet/harness/labtest"
	"github.com/vlmfleet/vlmfleet/internal/testutil"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// cliRun runs vlmfleet with args and returns its exit status and output.
func cliRun(t *testing.T, env map[string]string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(args, &out, &errb, func(k string) string { return env[k] })
	return code, out.String(), errb.String()
}

func writeJSONFile(t *testing.T, dir, name string, v any) string {
	t.Helper()
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return testutil.WriteFile(t, filepath.Join(dir, name), string(data))
}

// fakeImport stands in for the controller's POST /api/runs/import and
// records every request it gets.
type fakeImport struct {
	mu     sync.Mutex
	bodies []api.ImportRequest
	status int
	reply  string
}

func (f *fakeImport) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/api/runs/import" || r.Header.Get("Content-Type") != "application/json" {
		http.Error(w, `{"error":"wrong request"}`, http.StatusNotFound)
		return
	}
	var body api.ImportRequest
	data, _ := io.ReadAll(r.Body)
	if err := json.Unmarshal(data, &body); err != nil {
		http.Error(w, `{"error":"bad json"}`, http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	f.bodies = append(f.bodies, body)
	f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	if f.status != 0 {
		w.WriteHeader(f.status)
		io.WriteString(w, f.reply)
		return
	}
	var ids []string
	for i := range body.Runs {
		ids = append(ids, "imported-"+string(rune('a'+i)))
	}
	json.NewEncoder(w).Encode(map[string]any{"imported": len(ids), "ids": ids})
}

// startFakeImport serves a fakeImport until the test ends; base is its URL.
func startFakeImport(t *testing.T) (f *fakeImport, base string) {
	f = &fakeImport{}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return f, srv.URL
}

func (f *fakeImport) requests() []api.ImportRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]api.ImportRequest(nil), f.bodies...)
}

func TestResultsImport(t *testing.T) {
	fake, base := startFakeImport(t)
	dir := t.TempDir()
	a := writeJSONFile(t, dir, "bench-a.json", labtest.ResultDoc("run-a", "Qwen3-VL-4B-Instruct"))
	b := writeJSONFile(t, dir, "two.json", []protocol.Run{labtest.ResultDoc("run-b", "M2"), labtest.ResultDoc("run-c", "M3")})

	// Flags may follow the files.
	code, out, errOut := cliRun(t, nil, "results", "import", a, b, "--controller", base+"/")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	reqs := fake.requests()
	if len(reqs) != 1 || len(reqs[0].Runs) != 3 {
		t.Fatalf("requests %+v, want one with three runs", reqs)
	}
	for i, want := range []struct{ origin, id string }{{"bench-a.json", "run-a"}, {"two.json", "run-b"}, {"two.json", "run-c"}} {
		got := reqs[0].Runs[i]
		if got.Origin != want.origin || got.Run.ID != want.id || got.Run.Config.Model == "" {
			t.Errorf("run %d: origin %q id %q, want %q %q", i, got.Origin, got.Run.ID, want.origin, want.id)
		}
	}
	if !strings.Contains(out, "imported 3 of 3 runs into "+base) || !strings.Contains(out, "imported-a  (bench-a.json)") {
		t.Errorf("output:\n%s", out)
	}

	// --origin labels every run; the environment names the controller.
	code, _, errOut = cliRun(t, map[string]string{"VLMFLEET_CONTROLLER": base}, "results", "import", "--origin", "lab-berlin", a)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if reqs = fake.requests(); len(reqs) != 2 || reqs[1].Runs[0].Origin != "lab-berlin" {
		t.Errorf("second import %+v, want origin lab-berlin", reqs[len(reqs)-1])
	}
}

// TestResultsImportAtomic: one bad file among good ones sends nothing at all.
func TestResultsImportAtomic(t *testing.T) {
	fake, base := startFakeImport(t)
	dir := t.TempDir()
	good := writeJSONFile(t, dir, "good.json", labtest.ResultDoc("run-a", "M"))
	badJSON := testutil.WriteFile(t, filepath.Join(dir, "x.json"), "{\n  \"schema\": 1,\n  \"id\": \"r\",\n    oops\n}")
	noModel := labtest.ResultDoc("run-b", "")
	badRun := writeJSONFile(t, dir, "nomodel.json", noModel)
	badCombo := labtest.ResultDoc("run-c", "M")
	badCombo.Combinations[1].Size = "4K"
	badArray := writeJSONFile(t, dir, "array.json", []protocol.Run{labtest.ResultDoc("run-d", "M"), badCombo})
	for _, c := range []struct {
		file string
		want []string
	}{
		{badJSON, []string{"x.json: result document: line 4 column ", "invalid character 'o'"}},
		{badRun, []string{"nomodel.json: result document: config.model is empty"}},
		{badArray, []string{"array.json: [1], starting on line", "combinations[1]", `"4K"`}},
		{filepath.Join(dir, "missing.json"), []string{"missing.json", "no such file"}},
	} {
		code, _, errOut := cliRun(t, nil, "results", "import", "--controller", base, good, c.file)
		if code != 1 {
			t.Errorf("%s: exit %d, want 1", c.file, code)
		}
		for _, w := range c.want {
			if !strings.Contains(errOut, w) {
				t.Errorf("%s: error %q does not say %q", filepath.Base(c.file), errOut, w)
			}
		}
	}
	if n := len(fake.requests()); n != 0 {
		t.Fatalf("%d requests reached the controller, want none", n)
	}

	// The controller's refusal is reported with its reason.
	fake.status, fake.reply = http.StatusBadRequest, `{"error":"runs[0]: run-a is already stored"}`
	code, _, errOut := cliRun(t, nil, "results", "import", "--controller", base, good)
	if code != 1 || !strings.Contains(errOut, "import: controller answered 400 Bad Request: runs[0]: run-a is already stored") {
		t.Errorf("exit %d, %s", code, errOut)
	}
}

func TestResultsImportUsage(t *testing.T) {
	for _, args := range [][]string{
		{"results"},
		{"results", "export"},
		{"results", "import"},
		{"results", "import", "--controller", "127.0.0.1:8080", "a.json"},
		{"results", "import", "--nope", "a.json"},
	} {
		if code, _, errOut := cliRun(t, nil, args...); code != 2 || errOut == "" {
			t.Errorf("%v: exit %d, want 2 with a message", args, code)
		}
	}
}

// results import sends the API token from --token-file, $VLMFLEET_TOKEN or
// $VLMFLEET_TOKEN_FILE; without one the controller refuses, and the error
// says how to give it.
func TestResultsImportSendsTheToken(t *testing.T) {
	l := labtest.Start(t, controller.Options{})
	file := writeJSONFile(t, t.TempDir(), "bench-a.json", labtest.ResultDoc("run-a", "M"))
	base := l.Ctl.HTTPURL()
	code, _, errOut := cliRun(t, nil, "results", "import", "--controller", base, file)
	if code != 1 || !strings.Contains(errOut, "401 Unauthorized") || !strings.Contains(errOut, "pass --token-file <data-dir>/api-token or set VLMFLEET_TOKEN") {
		t.Errorf("without the token: exit %d, %s", code, errOut)
	}
	for _, c := range []struct {
		env  map[string]string
		args []string
	}{
		{nil, []string{"--token-file", l.TokenFile}},
		{map[string]string{"VLMFLEET_TOKEN": l.Ctl.APIToken()}, nil},
		{map[string]string{"VLMFLEET_TOKEN_FILE": l.TokenFile}, nil},
	} {
		args := append([]string{"results", "import", "--controller", base, file}, c.args...)
		if code, out, errOut := cliRun(t, c.env, args...); code != 0 || !strings.Contains(out, "imported 1 of 1 runs") {
			t.Errorf("%v %v: exit %d, %s%s", c.env, c.args, code, out, errOut)
		}
	}
}
