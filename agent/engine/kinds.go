package engine

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// engineKind is what one kind of engine decides for itself. Each kind
// lives in its own file, which registers it (register, from the file's
// init) with its defaults and checks; the settings every kind shares are
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

// registry holds the kinds by name. Each kind's file adds itself during
// package initialisation, as database/sql drivers do; nothing changes it
// afterwards, so it is read without a lock.
var registry = map[string]engineKind{}

// register adds a kind. Two kinds of one name are a programming error,
// found by every test of the package.
func register(k engineKind) {
	if k.name() == "" {
		panic("engine: a kind without a name")
	}
	if _, dup := registry[k.name()]; dup {
		panic(fmt.Sprintf("engine: kind %q registered twice", k.name()))
	}
	registry[k.name()] = k
}

func kindNamed(name string) (engineKind, bool) {
	k, ok := registry[name]
	return k, ok
}

// registered returns the kinds in the order of their names, the order
// messages and tests list them in.
func registered() []engineKind {
	out := make([]engineKind, 0, len(registry))
	for _, k := range registry {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name() < out[j].name() })
	return out
}

// Kinds returns the engine kinds an agent can be configured with, sorted.
func Kinds() []string {
	var names []string
	for _, k := range registered() {
		names = append(names, k.name())
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

// processKinds are the kinds vlmfleet starts itself, sorted.
func processKinds() []processKind {
	var out []processKind
	for _, k := range registered() {
		if pk, ok := k.(processKind); ok {
			out = append(out, pk)
		}
	}
	return out
}

// processKindNames lists the kinds vlmfleet starts itself, as a sentence
// does: "a, b and c".
func processKindNames() string {
	var names []string
	for _, k := range processKinds() {
		names = append(names, k.name())
	}
	return sentence(names)
}

// sentence joins words as a sentence lists them: "a", "a and b", "a, b and c".
func sentence(words []string) string {
	if len(words) < 2 {
		return strings.Join(words, "")
	}
	return strings.Join(words[:len(words)-1], ", ") + " and " + words[len(words)-1]
}
