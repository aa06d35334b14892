package controller

import (
	"testing"
)

// FuzzDecodeCursor: a cursor comes from the network; whatever a client
// sends, decoding it never panics, and what it accepts is a cursor of the
// list asked for that encodes back to a cursor decoding the same.
// go test -run '^$' -fuzz FuzzDecodeCursor -fuzztime 60s ./controller/
func FuzzDecodeCursor(f *testing.F) {
	f.Add(encodeCursor(cursor{kind: kindRuns, key: "sw-20261101-000000-aaaa-j1-a1"}), byte(kindRuns))
	f.Add(encodeCursor(cursor{kind: kindRejected, newest: true, key: "\x00\x00\x00\x00\x00\x00\x00\x07"}), byte(kindRejected))
	f.Add(encodeCursor(cursor{kind: kindJobs, key: "x"}), byte(kindSweeps))
	f.Add("", byte(kindRuns))
	f.Add("AQ", byte(kindRuns))
	f.Add("!!!!", byte(kindJobs))
	f.Fuzz(func(t *testing.T, s string, kind byte) {
		c, err := decodeCursor(s, listKind(kind))
		if err != nil {
			return
		}
		if c.kind != listKind(kind) || c.key == "" || len(c.key) > maxCursorKey {
			t.Fatalf("decodeCursor(%q) accepted %+v", s, c)
		}
		again, err := decodeCursor(encodeCursor(c), listKind(kind))
		if err != nil || again != c {
			t.Fatalf("cursor %+v encodes to one that decodes to %+v, %v", c, again, err)
		}
	})
}

func TestCursorRoundTrips(t *testing.T) {
	for _, c := range []cursor{
		{kind: kindRuns, key: "run-1"},
		{kind: kindJobs, newest: true, key: "sw-20261101-000000-aaaa-j10"},
		{kind: kindRejected, newest: true, key: "\x00\x00\x00\x00\x00\x00\x01\x00"},
	} {
		got, err := decodeCursor(encodeCursor(c), c.kind)
		if err != nil || got != c {
			t.Errorf("%+v: decoded %+v, %v", c, got, err)
		}
		if _, err := decodeCursor(encodeCursor(c), kindSweeps); err == nil {
			t.Errorf("%+v: accepted as a cursor of sweeps", c)
		}
	}
}
