package controller

import (
	"testing"
)

func FuzzDecodeImportRequest(f *testing.F) {
	f.Add([]byte(`{"runs":[{"origin":"a.json","run":{"schema":1,"id":"r","config":{"model":"m"},"status":"completed","workload":{"prompt":"p","max_tokens":1,"sizes":["720p"],"cameras":[1],"requests_per_level":1},"combinations":[]}}]}`))
	f.Add([]byte(`{"runs":[{"run":{"schema":99}}]}`))
	f.Add([]byte(`{"runs":"x"}`))
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		entries, err := DecodeImportRequest(data)
		if err != nil {
			return
		}
		if len(entries) == 0 {
			t.Fatal("no error and no entries")
		}
		for _, e := range entries {
			_ = e.Run.Validate()
		}
	})
}
