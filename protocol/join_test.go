package protocol

import (
	"strings"
	"testing"

	"github.com/nats-io/nkeys"
)

const (
	testSecret = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJ0123456"
	testPin    = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	testJoin   = "vlmfleet-join:1:0123456789ab:" + testSecret + ":" + testPin + ":https://ctl.lab:8443/vf"
)

func TestParseJoinString(t *testing.T) {
	j, err := ParseJoinString("  " + testJoin + "\n")
	if err != nil {
		t.Fatal(err)
	}
	want := JoinString{URL: "https://ctl.lab:8443/vf", TokenID: "0123456789ab", Secret: testSecret, CAPin: testPin}
	if j != want || j.String() != testJoin {
		t.Fatalf("got %+v (%s), want %+v", j, j, want)
	}
	bad := map[string]string{
		"":                                 "does not begin",
		"vlmfleet-join:2:" + testJoin[16:]: "does not begin",
		strings.Replace(testJoin, "0123456789ab:", "0123456789AB:", 1):   "join token id",
		strings.Replace(testJoin, testSecret, testSecret[1:], 1):         "secret",
		strings.Replace(testJoin, testSecret, "!"+testSecret[1:], 1):     "secret",
		strings.Replace(testJoin, "sha256:0123", "md5:0123", 1):          "CA fingerprint",
		strings.Replace(testJoin, "https://", "http://", 1):              "https URL",
		strings.Replace(testJoin, "https://ctl.lab", "https://u@ctl", 1): "https URL",
		testJoin + "?x=1":                    "https URL",
		testJoin[:60]:                        "too few fields",
		testJoin + strings.Repeat("a", 1024): "bytes, at most",
	}
	for s, want := range bad {
		_, err := ParseJoinString(s)
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "the join string is malformed") {
			t.Errorf("%q: %v, want an error saying %q", s, err, want)
		}
		if err != nil && strings.Contains(err.Error(), testSecret[5:20]) {
			t.Errorf("%q: the error quotes the secret: %v", s, err)
		}
	}
}

// A join string that parses formats back to itself, and no error repeats
// what it was given.
func FuzzParseJoinString(f *testing.F) {
	f.Add(testJoin)
	f.Add(strings.Replace(testJoin, "https://ctl.lab:8443/vf", "https://[::1]:8080", 1))
	f.Add("vlmfleet-join:1:::::")
	f.Add("vlmfleet-join:1:0123456789ab:" + testSecret + ":sha256:zz:https://x")
	f.Fuzz(func(t *testing.T, s string) {
		j, err := ParseJoinString(s)
		if err != nil {
			if len(s) > 40 && strings.Contains(err.Error(), s) {
				t.Fatalf("the error quotes the string: %v", err)
			}
			return
		}
		again, err := ParseJoinString(j.String())
		if err != nil || again != j {
			t.Fatalf("%q: formatted %q parses to %+v, %v", s, j.String(), again, err)
		}
	})
}

// testUserKey is a public user nkey (nkeys.CreateUser's), for requests
// that must pass the key's check.
const testUserKey = "UAHDIX2BPFEGW54KKAA4RS5TKUVF3IHHK5B5GR26BH7ULJDUEVP2CZJX"

// A join's public key is a user nkey with a valid checksum: a 56-character
// string that merely starts with U would spend a use of the token.
func TestDecodeJoinRequestWantsAUserNkey(t *testing.T) {
	req := func(pub string) []byte {
		return []byte(`{"token_id":"0123456789ab","secret":"` + testSecret + `","agent_id":"orin1","public_key":"` + pub + `"}`)
	}
	if r, err := DecodeJoinRequest(req(testUserKey)); err != nil || r.PublicKey != testUserKey {
		t.Fatalf("a user nkey: %+v, %v", r, err)
	}
	for name, pub := range map[string]string{
		"U and 55 others":         "U" + strings.Repeat("<", 55),
		"a broken checksum":       testUserKey[:55] + "A",
		"an account key":          "A" + testUserKey[1:],
		"a user seed's prefix":    "SU" + testUserKey[2:],
		"lowercase of a good one": strings.ToLower(testUserKey),
	} {
		if _, err := DecodeJoinRequest(req(pub)); err == nil || !strings.Contains(err.Error(), "public_key: want a public user nkey") {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func FuzzDecodeJoinRequest(f *testing.F) {
	f.Add([]byte(`{"token_id":"0123456789ab","secret":"` + testSecret + `","agent_id":"orin1","public_key":"UABC"}`))
	f.Add([]byte(`{"token_id":"0123456789ab","secret":"` + testSecret + `","agent_id":"orin1","public_key":"` + testUserKey + `"}`))
	f.Add([]byte(`{"token_id":"0123456789ab"} {}`))
	f.Add([]byte(`{"x":1}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := DecodeJoinRequest(data)
		if err != nil {
			return
		}
		if ValidateAgentID(r.AgentID) != nil || ValidateJoinTokenID(r.TokenID) != nil || len(r.Secret) != JoinSecretLen ||
			!nkeys.IsValidPublicUserKey(r.PublicKey) {
			t.Fatalf("accepted %+v", r)
		}
	})
}

func FuzzDecodeJoinAnswer(f *testing.F) {
	f.Add([]byte(`{"agent_id":"orin1","public_key":"U","nats_url":"tls://ctl:4222","ca_fingerprint":"sha256:00"}`))
	f.Add([]byte(`{"agent_id":"","nats_url":"::"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		a, err := DecodeJoinAnswer(data)
		if err == nil && ValidateAgentID(a.AgentID) != nil {
			t.Fatalf("accepted %+v", a)
		}
	})
}
