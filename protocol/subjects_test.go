package protocol

import (
	"strings"
	"testing"
)

// No password reaches a log: not the second node's of a cluster's URL
// list, not one that makes the URL unparsable.
func TestRedactURL(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"nats://a:4222", "nats://a:4222"},
		{"nats://controller:secret@a:4222", "nats://controller:xxxxx@a:4222"},
		{"nats://controller:secret@a:4222,nats://controller:secret@b:4222, nats://controller:secret@c:4222",
			"nats://controller:xxxxx@a:4222,nats://controller:xxxxx@b:4222,nats://controller:xxxxx@c:4222"},
		{"nats://a:4222,nats://b:4222", "nats://a:4222,nats://b:4222"},
		{"nats://controller:se%zzcret@a:4222", "nats://xxxxx@a:4222"},
		{"controller:se%zzcret@a:4222", "xxxxx@a:4222"},
	} {
		got := RedactURL(tc.in)
		if got != tc.want {
			t.Errorf("RedactURL(%q) = %q, want %q", tc.in, got, tc.want)
		}
		if strings.Contains(got, "secret") || strings.Contains(got, "cret") {
			t.Errorf("RedactURL(%q) = %q shows the password", tc.in, got)
		}
	}
}
