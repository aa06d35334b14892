package telemetry

import (
	"math/rand/v2"

	"time"

	"github.com/vlmfleet/vlmfleet/agent/devicefacts"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// simProfile is how a simulated device's readings move with load.
type simProfile struct {
	idleW, maxW       float64
	memTotalMB        float64
	memIdle, memLoad  float64 // fractions of memTotalMB used at idle and added at full load
	idleTempC, hotC   float64
	jetson            string // "" for a dGPU; else the rail layout ("nx" or "agx")
	powerCapAtLoad    float64
	powerCapThrottled bool
}

func simProfileFor(device string) simProfile {
	switch devicefacts.SimProfileFor(device) {
	case devicefacts.SimOrinNX:
		return simProfile{idleW: 5, maxW: 25, memTotalMB: 15656, memIdle: 0.15, memLoad: 0.55, idleTempC: 42, hotC: 72, jetson: "nx"}
	case devicefacts.SimOrinNano:
		return simProfile{idleW: 4, maxW: 25, memTotalMB: 7620, memIdle: 0.2, memLoad: 0.6, idleTempC: 42, hotC: 70, jetson: "nx"}
	case devicefacts.SimAGXOrin:
		return simProfile{idleW: 15, maxW: 45, memTotalMB: 30536, memIdle: 0.12, memLoad: 0.6, idleTempC: 38, hotC: 68, jetson: "agx"}
	case devicefacts.SimRTXPro6000:
		return simProfile{idleW: 30, maxW: 600, memTotalMB: 97887, memIdle: 0.85, memLoad: 0.05, idleTempC: 35, hotC: 82}
	case devicefacts.SimRTXPro6000MaxQ:
		// The Max-Q edition runs into its 300 W cap under heavy load.
		return simProfile{idleW: 25, maxW: 300, memTotalMB: 97887, memIdle: 0.85, memLoad: 0.05, idleTempC: 35, hotC: 78,
			powerCapAtLoad: 0.9, powerCapThrottled: true}
	}
	if b, ok := devicefacts.SimDataCenterBoard(device); ok {
		// vLLM takes 90 % of the memory for weights and KV cache at start.
		return simProfile{idleW: 0.1 * b.MaxW, maxW: b.MaxW, memTotalMB: float64(b.MemoryMB), memIdle: 0.9, memLoad: 0.02,
			idleTempC: 32, hotC: 70}
	}
	return simProfile{idleW: 20, maxW: 250, memTotalMB: 24576, memIdle: 0.8, memLoad: 0.1, idleTempC: 35, hotC: 75}
}

// simulator synthesises plausible readings from the current load. Its
// temperature lags the load like a heatsink does.
type simulator struct {
	p    simProfile
	load func() float64
	temp float64
	rng  *rand.Rand
	// speed scales the draw above idle: a GPU slowed s times by its power
	// setting runs at a proportionally lower clock and draws 1/s of it.
	speed float64
	// ceilW is the most the device draws: the profile's maxW, or the power
	// setting's budget or limit where that is lower; capped says which.
	ceilW  float64
	capped bool
}

func newSimulator(device string, power devicefacts.SimPower, load func() float64) *simulator {
	p := simProfileFor(device)
	if load == nil {
		load = func() float64 { return 0 }
	}
	m := &simulator{p: p, load: load, temp: p.idleTempC, rng: rand.New(rand.NewPCG(1, 2)), speed: 1, ceilW: p.maxW}
	if power.Slowdown > 1 {
		m.speed = 1 / power.Slowdown
	}
	if power.CeilingW > 0 && power.CeilingW < p.maxW {
		m.ceilW, m.capped = power.CeilingW, true
	}
	return m
}

func (m *simulator) sample(interval time.Duration) protocol.TelemetrySample {
	l := min(1, max(0, m.load()))
	jitter := func(scale float64) float64 { return (m.rng.Float64()*2 - 1) * scale }
	util := min(100, max(0, l*100+jitter(3)*l))
	power := max(0, m.p.idleW+(m.p.maxW-m.p.idleW)*m.speed*l*(0.97+jitter(0.03)))
	power = min(power, m.ceilW)
	// First-order lag towards the load's temperature, time constant ~10 s.
	target := m.p.idleTempC + (m.p.hotC-m.p.idleTempC)*l
	m.temp += (target - m.temp) * min(1, interval.Seconds()/10)
	temp := m.temp + jitter(0.3)
	memUsed := m.p.memTotalMB * (m.p.memIdle + m.p.memLoad*l)
	total := m.p.memTotalMB
	s := protocol.TelemetrySample{GPUUtil: &util, PowerW: &power, TempC: &temp, MemUsedMB: &memUsed, MemTotalMB: &total}
	switch m.p.jetson {
	case "nx":
		s.Rails = map[string]float64{"VDD_IN": power, "VDD_CPU_GPU_CV": power * 0.45, "VDD_SOC": power * 0.3}
	case "agx":
		// The top-level rails sum to the power, as ParseTegrastats counts them.
		s.Rails = map[string]float64{"VDD_GPU_SOC": power * 0.5, "VDD_CPU_CV": power * 0.15,
			"VIN_SYS_5V0": power * 0.35, "VDDQ_VDD2_1V8AO": power * 0.05}
	}
	// A GPU held at a lower limit reports the cap as nvidia-smi does; a
	// Jetson's tegrastats has no such field.
	atLimit := m.capped && m.p.jetson == "" && power >= m.ceilW
	if atLimit || m.p.powerCapThrottled && l >= m.p.powerCapAtLoad {
		s.Throttle = []string{"sw_power_cap"}
	}
	s.Extra = map[string]float64{"sim_load": l}
	return s
}
