// Package faults holds the process-level fault tests and the soak. They
// build the vlmfleet binary (and a nats-server from the module in go.mod)
// once, run a controller, simulated agents and an external NATS server as
// real processes with credentials on, and kill, stop and restart them:
// what a lab really has, where the other tests stop things cleanly.
//
// They are slow, so they run only when asked: VLMFLEET_FAULTS=1 for the
// fault tests (./scripts/faults), VLMFLEET_SOAK=N for the soak over N
// agents (./scripts/soak N). Both print their figures on lines that begin
// "recovery:" and "soak:".
package faults
