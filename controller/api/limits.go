package api

import "github.com/vlmfleet/vlmfleet/protocol"

// Request body limits of the API; clients check them before sending. An
// import is also bounded per document (MaxImportDocument).
const (
	MaxSweepBody  = 1 << 20
	MaxImportBody = 64 << 20
)

// Import limits: one result document of an import may be as large as NATS
// carries one (protocol.MaxMessageBytes), and at most MaxConcurrentImports
// imports run at once (429 with Retry-After beyond).
const (
	MaxImportDocument    = protocol.MaxMessageBytes
	MaxConcurrentImports = 2
)

// The page size of a list endpoint: DefaultListLimit when the request names
// none, at most MaxListLimit.
const (
	DefaultListLimit = 100
	MaxListLimit     = 1000
)

// TokenFileName is the API token's file in the controller's data
// directory, unless the controller is given another; clients on the same
// host read the token from there.
const TokenFileName = "api-token"
