// Package realengine holds the end-to-end tests against real serving
// engines that the project builds itself (scripts/build-ollama), with the
// tiny model internal/testutil/tinyvlm writes. Their names start with
// TestRealOllama so that they can be run alone:
//
//	VLMFLEET_OLLAMA=$(scripts/build-ollama | tail -1) go test -run TestRealOllama ./e2e/realengine/
//
// Without VLMFLEET_OLLAMA they skip, unless CI or VLMFLEET_REQUIRE_REAL_ENGINE
// is set: then they fail, so that the suite never passes without them.
package realengine
