package power

import (
	"os"
	"testing"

	"github.com/vlmfleet/vlmfleet/agent/devicefacts/fakehw"
)

// fakeBinary is the fake nvpmodel and nvidia-smi, built once.
var fakeBinary string

func TestMain(m *testing.M) { os.Exit(fakehw.Main(m, &fakeBinary)) }
