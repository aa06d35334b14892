package protocol

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/nats-io/nkeys"
)

// A join string is what `vlmfleet join-token create` prints and
// `vlmfleet agent --join` takes: everything a device needs to enrol with a
// controller, on one line an operator can paste:
//
//	vlmfleet-join:1:<token id>:<secret>:sha256:<64 hex digits>:https://host:port[/prefix]
//
// The fields before the URL have fixed places and hold no ':', so the URL,
// last, may hold any. The pin is the controller's CA fingerprint: the
// device trusts the controller's TLS certificate by it alone.
const (
	joinPrefix = "vlmfleet-join:1:"
	// JoinTokenIDLen and JoinSecretLen are the lengths of a token's id
	// (12 hex digits) and of its secret (32 random bytes, unpadded
	// base64url).
	JoinTokenIDLen = 12
	JoinSecretLen  = 43
	// MaxJoinStringLen bounds a join string: a URL longer than this is
	// not a controller's address.
	MaxJoinStringLen = 1024
)

// JoinString is a parsed join string.
type JoinString struct {
	// URL is the controller's HTTPS API base URL, as devices reach it.
	URL     string
	TokenID string
	Secret  string
	// CAPin is "sha256:" and the CA's 64 lowercase hex digits.
	CAPin string
}

// String formats j as the join string ParseJoinString reads.
func (j JoinString) String() string {
	return joinPrefix + j.TokenID + ":" + j.Secret + ":" + j.CAPin + ":" + j.URL
}

// errJoinString is the one line every malformed join string gets, with
// what is wrong: the string itself is never repeated (it holds a secret).
func errJoinString(what string) error {
	return fmt.Errorf("the join string is malformed (%s): copy it again, whole, as `vlmfleet join-token create` printed it", what)
}

// ParseJoinString reads a join string. Its errors never quote the string:
// it carries a secret.
func ParseJoinString(s string) (JoinString, error) {
	s = strings.TrimSpace(s)
	if len(s) > MaxJoinStringLen {
		return JoinString{}, errJoinString(fmt.Sprintf("%d bytes, at most %d", len(s), MaxJoinStringLen))
	}
	rest, ok := strings.CutPrefix(s, joinPrefix)
	if !ok {
		return JoinString{}, errJoinString("it does not begin with " + joinPrefix)
	}
	f := strings.SplitN(rest, ":", 5)
	if len(f) != 5 {
		return JoinString{}, errJoinString("it has too few fields")
	}
	j := JoinString{TokenID: f[0], Secret: f[1], CAPin: f[2] + ":" + strings.ToLower(f[3]), URL: f[4]}
	if err := j.validate(); err != nil {
		return JoinString{}, errJoinString(err.Error())
	}
	return j, nil
}

func (j JoinString) validate() error {
	if err := ValidateJoinTokenID(j.TokenID); err != nil {
		return err
	}
	if len(j.Secret) != JoinSecretLen || !base64URL(j.Secret) {
		return errors.New("the secret is not 43 characters of base64url")
	}
	pin, ok := strings.CutPrefix(j.CAPin, "sha256:")
	if !ok || len(pin) != 64 || strings.Trim(pin, "0123456789abcdef") != "" {
		return errors.New("the CA fingerprint is not sha256: and 64 hex digits")
	}
	return ValidateJoinURL(j.URL)
}

// ValidateJoinTokenID checks a join token's id: 12 lowercase hex digits.
func ValidateJoinTokenID(id string) error {
	if len(id) != JoinTokenIDLen || strings.Trim(id, "0123456789abcdef") != "" {
		return fmt.Errorf("join token id %.20q: want %d lowercase hex digits", id, JoinTokenIDLen)
	}
	return nil
}

// ValidateJoinURL checks the controller's address in a join string: an
// https URL with a host, optionally a path, nothing else.
func ValidateJoinURL(s string) error {
	u, err := url.Parse(s)
	if err != nil || u.Scheme != "https" || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" ||
		u.Opaque != "" || strings.ContainsAny(s, " \t\r\n") {
		return errors.New("the controller's address is not an https URL with a host")
	}
	return nil
}

func base64URL(s string) bool {
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			return false
		}
	}
	return true
}

// JoinRequest is what a device sends to POST /api/join: the token it
// joins with, and the id and public nkey it chose. Its private key never
// leaves it.
type JoinRequest struct {
	TokenID   string `json:"token_id"`
	Secret    string `json:"secret"`
	AgentID   string `json:"agent_id"`
	PublicKey string `json:"public_key"`
}

// MaxJoinRequest bounds the body of POST /api/join.
const MaxJoinRequest = 4 << 10

// DecodeJoinRequest reads a join request: one JSON document, no unknown
// fields, every field well formed. Its errors never quote the secret.
func DecodeJoinRequest(data []byte) (JoinRequest, error) {
	var r JoinRequest
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return JoinRequest{}, fmt.Errorf("join request: %w", DescribeJSONError(data, dec.InputOffset(), err))
	}
	if dec.More() {
		return JoinRequest{}, errors.New("join request: trailing data after the JSON document")
	}
	if err := ValidateJoinTokenID(r.TokenID); err != nil {
		return JoinRequest{}, fmt.Errorf("join request: token_id: %w", err)
	}
	if len(r.Secret) != JoinSecretLen || !base64URL(r.Secret) {
		return JoinRequest{}, errors.New("join request: secret: want 43 characters of base64url")
	}
	if err := ValidateAgentID(r.AgentID); err != nil {
		return JoinRequest{}, fmt.Errorf("join request: agent_id: %w", err)
	}
	if !nkeys.IsValidPublicUserKey(r.PublicKey) {
		return JoinRequest{}, errors.New("join request: public_key: want a public user nkey (U and 55 more characters of base32 with a valid checksum)")
	}
	return r, nil
}

// JoinAnswer is the controller's answer to a join that enrolled the
// device: how it reaches NATS from now on.
type JoinAnswer struct {
	AgentID   string `json:"agent_id"`
	PublicKey string `json:"public_key"`
	// NATSURL is the controller's NATS server as the device reaches it.
	NATSURL string `json:"nats_url"`
	// CAFingerprint pins the NATS server's CA; empty when NATS has no TLS.
	CAFingerprint string `json:"ca_fingerprint,omitempty"`
	// Labels are the token's, applied to the agent.
	Labels map[string]string `json:"labels,omitempty"`
}

// DecodeJoinAnswer reads the controller's answer to a join.
func DecodeJoinAnswer(data []byte) (JoinAnswer, error) {
	var a JoinAnswer
	if err := json.Unmarshal(data, &a); err != nil {
		return JoinAnswer{}, fmt.Errorf("join answer: %w", err)
	}
	if err := ValidateAgentID(a.AgentID); err != nil {
		return JoinAnswer{}, fmt.Errorf("join answer: %w", err)
	}
	if u, err := url.Parse(a.NATSURL); err != nil || u.Host == "" {
		return JoinAnswer{}, fmt.Errorf("join answer: nats_url %.100q is not a URL with a host", a.NATSURL)
	}
	return a, nil
}
