// Package api is the controller's HTTP API as its clients see it: the
// request and response types, the limits a client checks before sending,
// pagination links, the token file's name, event kinds, and the decoding
// and checking of sweep files with the line, column and field of each
// problem. It imports no server package (NATS server, store, metrics), so
// that controller/client and the CLI link none of them; the controller
// builds these types from its own records.
package api
