package received

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/vlmfleet/vlmfleet/protocol"
)

// An agent's result message carries the idle power in its run header and
// the energy in its combination: both are taken in as sent, through the
// header cache too, and the combination's series is still kept as sent.
func TestDecodeKeepsEnergyAndIdlePower(t *testing.T) {
	m := resultWithSeries(4)
	m.Run.IdlePower = &protocol.IdlePower{Source: protocol.PowerSourceModuleInput, MeanPowerW: 44.8, WindowSec: 3, Series: agentSeries(6)}
	above := 3.5
	m.Combination.Energy = &protocol.Energy{Source: protocol.PowerSourceModuleInput, Samples: 4, MeanPowerW: 45.8,
		WindowSec: 2, JoulesPerAnswer: 11.45, AboveIdleJoulesPerAnswer: &above}
	data, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	headers := NewHeaderCache(8)
	for i := range 2 {
		r, err := Decode(data, headers)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(r.Run.IdlePower, m.Run.IdlePower) || !reflect.DeepEqual(r.Combination.Energy, m.Combination.Energy) {
			t.Errorf("decode %d: idle power %+v, energy %+v; want them as sent", i, r.Run.IdlePower, r.Combination.Energy)
		}
		series, _ := json.Marshal(m.Combination.TelemetrySeries)
		if !bytes.Equal(r.Series, series) {
			t.Errorf("decode %d: the combination's series kept as\n%s\nwant\n%s", i, r.Series, series)
		}
	}
}
