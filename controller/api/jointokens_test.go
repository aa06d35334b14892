package api

import (
	"strings"
	"testing"
	"time"
)

func TestDecodeJoinTokenRequest(t *testing.T) {
	r, err := DecodeJoinTokenRequest(nil)
	if err != nil || r.Uses != 1 || time.Duration(r.TTLSeconds)*time.Second != DefaultJoinTokenTTL {
		t.Fatalf("defaults: %+v, %v", r, err)
	}
	for body, want := range map[string]string{
		`{"ttl_seconds": 5}`:           "want 1m to",
		`{"uses": 1001}`:               "want 1 to 1000",
		`{"labels": {"bad key": "x"}}`: "key",
		`{"url": "http://ctl:8080"}`:   "https:// address",
		`{"secret": "x"}`:              "unknown field",
	} {
		if _, err := DecodeJoinTokenRequest([]byte(body)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", body, err, want)
		}
	}
}

func FuzzDecodeJoinTokenRequest(f *testing.F) {
	f.Add([]byte(`{"ttl_seconds":3600,"uses":2,"labels":{"site":"lab1"},"reenrol":true,"url":"https://ctl:8080"}`))
	f.Add([]byte(`{}`))
	f.Add([]byte(`{"uses":-1}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := DecodeJoinTokenRequest(data)
		if err == nil && (r.Uses < 1 || r.Uses > MaxJoinTokenUses || r.TTLSeconds < 60) {
			t.Fatalf("accepted %+v", r)
		}
	})
}
