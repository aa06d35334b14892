package simlab

// DemoDevice is one simulated lab device of the demo, with the camera levels
// the seed measured on that kind of device.
type DemoDevice struct {
	Device
	Cameras []int
	// Requests per camera level, as the seed measured: 8 on a Jetson, 24
	// on RTX PRO 6000.
	Requests int
}

// Demo is the lab of `vlmfleet demo`: the seed's three devices. Speed-ups
// compress each device's time; a fast device runs at a lower one: its
// response times are a few hundred milliseconds, and a millisecond of real
// overhead would be multiplied by the speed-up.
func Demo() []DemoDevice {
	dev := func(id, device string, speedup float64, models ...string) Device {
		return Device{ID: id, Device: device, Models: models, Speedup: speedup}
	}
	return []DemoDevice{
		{dev("sim-orin-nx", "Jetson Orin NX", 40, "Cosmos-Reason2-2B", "Gemma-4-E2B-it"), []int{1, 2, 4}, 8},
		{dev("sim-agx-orin", "Jetson AGX Orin", 40, "Cosmos3-Edge", "Qwen3-VL-4B-Instruct"), []int{1, 2, 4, 8}, 8},
		{dev("sim-rtx-pro-6000", "RTX PRO 6000", 10, "Qwen3-VL-4B-Instruct"), []int{1, 2, 4, 8, 16}, 24},
	}
}
