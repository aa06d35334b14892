package protocol

import (
	"regexp"
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

// FuzzPlainNames holds the id checks to the patterns they replaced.
func FuzzPlainNames(f *testing.F) {
	agent := regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$`)
	id := regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:-]{0,199}$`)
	for _, s := range []string{"", "a", "agx-orin_01", "-a", "a.b:c", "sw-20261202-002203-297c54e2-j1-a1", "a b", "é", strings.Repeat("a", 64), strings.Repeat("a", 65), strings.Repeat("a", 201)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := ValidateAgentID(s) == nil, agent.MatchString(s); got != want {
			t.Errorf("agent id %q: valid %v, the pattern says %v", s, got, want)
		}
		if got, want := ValidateID("id", s) == nil, id.MatchString(s); got != want {
			t.Errorf("id %q: valid %v, the pattern says %v", s, got, want)
		}
	})
}

// A reply subject is an agent's only when it lies in the agent's own
// inbox: not another agent's (a prefix of the id is another id), not the
// prefix itself, not a wildcard or a subject the server would split.
func TestCheckAgentReply(t *testing.T) {
	for _, ok := range []string{"_INBOX.a1.x", "_INBOX.a1.AbC123.1", "_INBOX.a1.kX9.42.7"} {
		if err := CheckAgentReply("a1", ok); err != nil {
			t.Errorf("%q refused: %v", ok, err)
		}
	}
	for _, bad := range []string{
		"", "_INBOX.a1", "_INBOX.a1.", "_INBOX.a1..x", "_INBOX.a1.x.", "_INBOX.a1x.y", "_INBOX.a.1", "_INBOX.a2.x",
		"_INBOX.a1.*", "_INBOX.a1.>", "_INBOX.a1.x.*", "_INBOX.a1.x y", "_INBOX.a1.x\tz", "_INBOX.a1.x\r\n",
		"_inbox.a1.x", "_INBOX.>", "vlmfleet.agent.a2.state", "vlmfleet.jobs.a2", "vlmfleet.control.a2",
		"$JS.API.STREAM.DELETE.VLMFLEET_EVENTS", "_INBOX.a1\x00.x",
	} {
		if err := CheckAgentReply("a1", bad); err == nil {
			t.Errorf("%q accepted as a1's reply subject", bad)
		}
	}
}
