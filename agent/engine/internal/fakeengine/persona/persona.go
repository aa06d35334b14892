// Package persona describes a serving program to the fake engine
// (agent/engine/internal/fakeengine) for a kind it has no role of its own
// for, so that a kind's test says how its real program behaves (its
// command line, endpoints and request fields, as seen in its source or
// documentation) and the fake plays it. Only tests use it.
package persona

import (
	"encoding/json"
	"fmt"
)

// Env is the variable the fake reads its persona from, as JSON.
const Env = "FAKE_PERSONA"

// Persona is one serving program as the fake plays it.
type Persona struct {
	// Name is the program in the fake's log lines.
	Name string `json:"name"`
	// Entry are the arguments after the executable that select the
	// server, e.g. ["-m", "sglang.launch_server"]; other arguments there
	// are refused.
	Entry []string `json:"entry"`
	// Flags are the server's options the fake knows, true for one that
	// takes a value; an unknown one is refused as argparse does.
	Flags map[string]bool `json:"flags"`
	// ModelFlag, ServedFlag and APIKeyFlag name the options for the model,
	// the name it is served as and the API key; --host and --port are
	// every server's.
	ModelFlag  string `json:"model_flag"`
	ServedFlag string `json:"served_flag"`
	APIKeyFlag string `json:"api_key_flag"`
	// Health answers 503 while the model warms up, 200 after.
	Health string `json:"health"`
	// OwnedBy is the owned_by of the model list's entry.
	OwnedBy string `json:"owned_by"`
	// InfoPath, when set, answers the options given (by their names in
	// snake case, flags without a value as true) with "version":
	// FAKE_VERSION, as SGLang's /get_server_info answers its server args;
	// FAKE_NO_VERSION_API=1 takes it away.
	InfoPath string `json:"info_path"`
	// VersionArgs, given after the executable instead of a server's
	// arguments, print FAKE_VERSION; --version alone prints
	// ExecutableVersion, the version of the executable itself (a Python
	// interpreter's, for a server that is a Python module).
	VersionArgs       []string `json:"version_args"`
	ExecutableVersion string   `json:"executable_version"`
	// Honours are the request fields that set the answer's length that
	// the program takes: "ignore_eos" (answer up to max_tokens) and
	// "min_tokens" (no end before that many).
	Honours []string `json:"honours"`
	// OOM is what the program prints when CUDA memory runs out.
	OOM string `json:"oom"`
}

// Encode is the persona as the fake's environment carries it.
func (p Persona) Encode() string {
	b, err := json.Marshal(p)
	if err != nil {
		panic(err) // a struct of strings, lists and maps always encodes
	}
	return string(b)
}

// Decode reads a persona from the fake's environment.
func Decode(s string) (Persona, error) {
	var p Persona
	if err := json.Unmarshal([]byte(s), &p); err != nil {
		return Persona{}, fmt.Errorf("%s: %w", Env, err)
	}
	if p.Name == "" || p.ModelFlag == "" || p.Health == "" {
		return Persona{}, fmt.Errorf("%s: name, model_flag and health are required", Env)
	}
	return p, nil
}
