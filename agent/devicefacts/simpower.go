package devicefacts

import "github.com/vlmfleet/vlmfleet/protocol"

// SimPowerModes are a simulated Jetson's nvpmodel modes, as its
// /etc/nvpmodel.conf would list them, and the mode it starts in; none for
// a simulated GPU host.
func SimPowerModes(deviceName string) (modes []protocol.PowerMode, current string) {
	switch SimProfileFor(deviceName) {
	case SimOrinNX:
		return []protocol.PowerMode{{ID: 0, Name: "MAXN"}, {ID: 1, Name: "10W"}, {ID: 2, Name: "15W"}, {ID: 3, Name: "25W"}}, "MAXN"
	case SimAGXOrin:
		return []protocol.PowerMode{{ID: 0, Name: "MAXN"}, {ID: 1, Name: "15W"}, {ID: 2, Name: "30W"}, {ID: 3, Name: "50W"}}, "MAXN"
	case SimOrinNano:
		return []protocol.PowerMode{{ID: 0, Name: "15W"}, {ID: 1, Name: "7W"}, {ID: 2, Name: "MAXN_SUPER"}}, "MAXN_SUPER"
	}
	return nil, ""
}
