// Package protocol holds everything that crosses a process boundary in
// vlmfleet: the wire types exchanged over NATS, the subject and stream names,
// the schema version, and the validation every receiver applies before it
// trusts a message. It imports nothing else from this repository so that the
// agent, the controller, the explorer and third-party tools can share it.
package protocol

// SchemaVersion is stamped into every message and result document. A receiver
// rejects a document whose schema is newer than its own, because it cannot know
// what the unknown fields mean; older schemas are read as they are.
const SchemaVersion = 1
