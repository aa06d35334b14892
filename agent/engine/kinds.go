package engine

import (
	"strings"
	"time"
)

// engineKind is what one kind of engine decides for itself. Each kind
// lives in its own file (vllm.go, llamacpp.go, ollama.go, external.go,
// sim.go) with its defaults and checks; the settings every kind shares are
// checked in config.go, and the kinds started as child processes share
// theirs in prockind.go.
type engineKind interface {
	// name is the kind as the config writes it.
	name() string
	// startupTimeout bounds the wait for readiness when the config sets none.
	startupTimeout() time.Duration
	// resolve checks the settings of r.Config this kind reads, refuses
	// those it takes no part in, and fills in r's command, model and
	// served name.
	resolve(r *resolved, env Env) error
	// newEngine returns the engine of a resolved config; nothing starts.
	newEngine(r *resolved, env Env) Engine
}

// kinds are the engine kinds an agent can be configured with, in the
// order the error messages list them.
var kinds = []engineKind{vllmKind, llamaKind, ollamaKind, externalKind{}, simKind{}}

func kindNamed(name string) (engineKind, bool) {
	for _, k := range kinds {
		if k.name() == name {
			return k, true
		}
	}
	return nil, false
}

// Kinds returns the engine kinds an agent can be configured with.
func Kinds() []string {
	names := make([]string, len(kinds))
	for i, k := range kinds {
		names[i] = k.name()
	}
	return names
}

// DefaultStartupTimeout is how long a kind may take to become ready when
// the config does not say; a minute for a kind it does not know.
func DefaultStartupTimeout(kind string) time.Duration {
	if k, ok := kindNamed(kind); ok {
		return k.startupTimeout()
	}
	return time.Minute
}

// processKindNames lists the kinds vlmfleet starts itself, as a sentence
// does: "a, b and c".
func processKindNames() string {
	var names []string
	for _, k := range kinds {
		if _, ok := k.(processKind); ok {
			names = append(names, k.name())
		}
	}
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}
