package controller

import "github.com/vlmfleet/vlmfleet/controller/api"

// The event names ingest.go and ingestbatch.go emit (and their tests read). Those files are being
// moved to a package of their own; once there they name api's event types
// themselves and this file goes.
const (
	EventAgent  = api.EventAgent
	EventState  = api.EventState
	EventResult = api.EventResult
)

// ResultEvent is what ingest.go emits for a stored result; Event is what
// its tests wait for.
type (
	ResultEvent = api.ResultEvent
	Event       = api.Event
)
