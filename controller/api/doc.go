// Package api is the controller's HTTP API as its clients see it: the
// request and response types, the limits a client checks before sending,
// pagination links, the token file's name, event kinds, and the error
// answer with a refused sweep's line, column and field of each problem
// (controller/sweepfile decodes and checks sweeps). It imports no server
// package (NATS server, store, metrics) nor the YAML decoder, so that
// controller/client links none of them; the controller builds these types
// from its own records.
package api
