package main

import (
	"os"
	"testing"
)

// asCLI makes the test binary run as the vlmfleet command: the tests that
// need real processes (join_test.go) start it with this set, so that they
// run this tree's program without building it.
const asCLI = "VLMFLEET_TEST_AS_CLI"

func TestMain(m *testing.M) {
	if os.Getenv(asCLI) == "1" {
		os.Exit(run(os.Args[1:], os.Stdout, os.Stderr, os.Getenv))
	}
	os.Exit(m.Run())
}
