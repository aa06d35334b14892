package protocol

import (
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"
)

// MaxLabels bounds how many labels an agent carries or a sweep selects by.
const MaxLabels = 64

// labelKeyPattern keeps label keys plain, so that they read the same in
// YAML, JSON, a URL and on a page.
var labelKeyPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._/-]{0,62}$`)

// ValidateLabels checks labels (an agent's from its configuration, or a
// sweep's selection); field names the map in errors ("labels",
// "agent_labels").
func ValidateLabels(field string, labels map[string]string) error {
	if len(labels) > MaxLabels {
		return fmt.Errorf("%s: %d labels, at most %d", field, len(labels), MaxLabels)
	}
	keys := make([]string, 0, len(labels))
	for k := range labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if !labelKeyPattern.MatchString(k) {
			return fmt.Errorf("%s: key %.70q: want 1-63 letters, digits, '.', '_', '/' or '-', starting with a letter or digit", field, k)
		}
		if err := checkLen(field+"."+k, labels[k], MaxNameLen); err != nil {
			return err
		}
	}
	return nil
}

// ParseLabels reads labels written as on a command line, "k=v,k2=v2", and
// validates them; field names them in errors ("--agent-labels"). An empty
// string is no labels.
func ParseLabels(field, s string) (map[string]string, error) {
	out := map[string]string{}
	for i, kv := range SplitList(s) {
		k, v, ok := strings.Cut(kv, "=")
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if !ok || k == "" {
			return nil, fmt.Errorf("%s: item %d, %q, is not key=value; want e.g. site=lab1,rack=3", field, i+1, kv)
		}
		if _, dup := out[k]; dup {
			return nil, fmt.Errorf("%s: key %q is given twice", field, k)
		}
		out[k] = v
	}
	if err := ValidateLabels(field, out); err != nil {
		return nil, err
	}
	return out, nil
}

// LabelsMatch reports whether have carries every label of want with the
// same value (an empty want matches everything).
func LabelsMatch(have, want map[string]string) bool {
	for k, v := range want {
		if got, ok := have[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// Drain tells an agent, on its control subject, whether to take new jobs:
// a drained agent finishes the job it runs and fetches no more until it is
// undrained. The controller repeats it while the agent's heartbeats say
// otherwise, so an agent that missed it (offline, restarted) learns it at
// its next heartbeat.
type Drain struct {
	Schema  int  `json:"schema"`
	Drained bool `json:"drained"`
	// Encodings are the compressions of result messages the controller
	// takes (EncodingS2), in its answer to an agent's first heartbeat; an
	// agent sends its results plain to one that names none.
	Encodings []string `json:"encodings,omitempty"`
	// JobConsumer, in the answer to an agent's first heartbeat, says that
	// the controller has made the agent's job consumer (or tried to: the
	// agent asks again while it finds none). The agent binds it and never
	// creates it; it may not. An agent answered without it (a controller
	// from before) creates its consumer itself, as it did then.
	JobConsumer bool `json:"job_consumer,omitempty"`
	// Refused, in the answer to a heartbeat, says that the controller
	// refuses this process of the agent (another process holds its id),
	// why and what to do; the agent stops. An agent from before ignores it.
	Refused string `json:"refused,omitempty"`
}

// DecodeControl reads a message of an agent's control subject: a Drain
// when it carries "drained", else a Cancel.
func DecodeControl(data []byte) (*Cancel, *Drain, error) {
	var probe struct {
		Drained *bool `json:"drained"`
	}
	if err := json.Unmarshal(data, &probe); err == nil && probe.Drained != nil {
		d, err := decode("drain", data, func(d *Drain) int { return d.Schema }, func(*Drain) error { return nil })
		return nil, d, err
	}
	c, err := DecodeCancel(data)
	return c, nil, err
}
