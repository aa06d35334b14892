package store

import (
	"maps"
)

// withEnrolment returns a with what its identity says of how it was
// enrolled: when, by which join token, whether it was revoked since, and
// the token's labels, which are merged over those the agent announces.
// The token's win on a key both set: they are the controller operator's word on the device, and a
// device's configuration cannot take them back. They are applied as the
// agent is read, so that they hold from the first hello on, whichever came
// first, without rewriting what the agent announced. a's maps are shared
// with the store's view, so the labels are merged into a copy.
func withEnrolment(a Agent, ident Identity) Agent {
	a.EnrolledAt, a.EnrolledByToken, a.RevokedAt = ident.CreatedAt, ident.Token, ident.RevokedAt
	if len(ident.Labels) > 0 {
		labels := maps.Clone(a.Hello.Labels)
		if labels == nil {
			labels = map[string]string{}
		}
		maps.Copy(labels, ident.Labels)
		a.Hello.Labels = labels
	}
	return a
}
