package protocol

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestDecodeRunFile(t *testing.T) {
	doc, _ := json.MarshalIndent(sampleRun(), "", "  ")
	second := sampleRun()
	second.ID = "r2"
	doc2, _ := json.Marshal(second)
	raws, runs, err := DecodeRunFile(append(append(append([]byte("[\n"), doc...), ",\n"...), append(doc2, ']')...))
	if err != nil || len(raws) != 2 || runs[1].ID != "r2" {
		t.Fatalf("array: %d documents, %v", len(raws), err)
	}
	bad := sampleRun()
	bad.Config.Model = ""
	docBad, _ := json.Marshal(bad)
	for name, c := range map[string]struct {
		data string
		want string
	}{
		"empty":    {" \n", "empty"},
		"no runs":  {"[]", "no result documents"},
		"trailing": {"[" + string(doc2) + "] x", "trailing data"},
		"bad run":  {"[" + string(doc2) + ",\n\n" + string(docBad) + "]", "[1], starting on line 3: result document: config.model"},
		"syntax":   {"[\n" + string(doc2) + ",\n{\"schema\": 1,,}]", "[1]: line 2 column"},
	} {
		if _, _, err := DecodeRunFile([]byte(c.data)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", name, err, c.want)
		}
	}
}

func TestReadRunFileNamesTheFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "run.json")
	if err := os.WriteFile(path, []byte("{\n  \"schema\": 1,\n    oops\n}"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := ReadRunFile(path); err == nil || !strings.HasPrefix(err.Error(), path+": result document: line 3 column") {
		t.Errorf("got %v", err)
	}
	if _, _, err := ReadRunFile(path + ".missing"); err == nil || !strings.Contains(err.Error(), "run.json.missing") {
		t.Errorf("missing file: %v", err)
	}
}

func FuzzDecodeRunFile(f *testing.F) {
	doc, _ := json.Marshal(sampleRun())
	f.Add(doc)
	f.Add(append(append([]byte("[\n"), doc...), ",\n{}]"...))
	f.Add([]byte("[]"))
	f.Add([]byte("[1,2] x"))
	f.Fuzz(func(t *testing.T, data []byte) {
		raws, runs, err := DecodeRunFile(data)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error")
			}
			return
		}
		if len(raws) != len(runs) || len(runs) == 0 {
			t.Fatalf("%d documents, %d runs", len(raws), len(runs))
		}
		for _, raw := range raws {
			if !json.Valid(raw) {
				t.Fatalf("invalid JSON passed on: %s", raw)
			}
		}
	})
}
