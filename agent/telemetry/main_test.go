package telemetry

import (
	"os"
	"testing"

	"github.com/vlmfleet/vlmfleet/agent/devicefacts/fakehw"
)

// fakeBinary is the fake tools binary TestMain builds once for all tests.
var fakeBinary string

func TestMain(m *testing.M) { os.Exit(fakehw.Main(m, &fakeBinary)) }
