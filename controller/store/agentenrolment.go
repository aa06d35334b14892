package store

import (
	"maps"

	bolt "go.etcd.io/bbolt"
)

// withEnrolment adds to a what the agent's identity says of how it was
// enrolled: when, by which join token, and the token's labels, which
// are merged over those the agent announces. The token's win on a key
// both set: they are the controller operator's word on the device, and
// a device's configuration cannot take them back. They are applied
// here, as the agent is read, so that they hold from the first hello on,
// whichever came first, without rewriting what the agent announced.
func withEnrolment(tx *bolt.Tx, a *Agent) error {
	var ident Identity
	ok, err := getJSON(tx.Bucket(bucketIdentities), a.Hello.AgentID, &ident)
	if err != nil || !ok {
		return err
	}
	a.EnrolledAt, a.EnrolledByToken = ident.CreatedAt, ident.Token
	if len(ident.Labels) > 0 {
		labels := maps.Clone(a.Hello.Labels)
		if labels == nil {
			labels = map[string]string{}
		}
		maps.Copy(labels, ident.Labels)
		a.Hello.Labels = labels
	}
	return nil
}
