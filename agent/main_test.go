package agent_test

import (
	"os"
	"testing"
)

// TestMain removes what the tests built on first use (buildOnce).
func TestMain(m *testing.M) {
	code := m.Run()
	if buildDir != "" {
		_ = os.RemoveAll(buildDir)
	}
	os.Exit(code)
}
