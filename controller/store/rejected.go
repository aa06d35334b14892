package store

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
)

// MaxRejected bounds the rejected bucket; the oldest entries go first.
const MaxRejected = 10000

// excerptBytes is how much of a rejected message is kept for diagnosis.
const excerptBytes = 512

// Rejection records a message the controller refused to store and why.
type Rejection struct {
	Seq       uint64    `json:"seq"`
	Time      time.Time `json:"time"`
	Subject   string    `json:"subject"`
	StreamSeq uint64    `json:"stream_seq,omitempty"`
	Reason    string    `json:"reason"`
	Bytes     int       `json:"bytes"`
	Excerpt   string    `json:"excerpt,omitempty"`
}

// Reject records a refused message. data is kept only as a short excerpt.
func (s *Store) Reject(r Rejection, data []byte) error {
	r.Bytes = len(data)
	if len(data) > excerptBytes {
		data = data[:excerptBytes]
	}
	r.Excerpt = string(data)
	err := s.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketRejected)
		seq, err := b.NextSequence()
		if err != nil {
			return err
		}
		r.Seq = seq
		v, err := json.Marshal(&r)
		if err != nil {
			return err
		}
		if err := b.Put(seqKey(seq), v); err != nil {
			return err
		}
		// Keep the bucket bounded: a misbehaving agent must not fill the
		// disk. Keys are the sequence, so everything at or below seq-Max is
		// the surplus and sits at the front; usually that is one key.
		if seq <= MaxRejected {
			return nil
		}
		cutoff := seq - MaxRejected
		for {
			k, _ := b.Cursor().First()
			if k == nil || binary.BigEndian.Uint64(k) > cutoff {
				break
			}
			if err := b.Delete(k); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("store: record rejection: %w", err)
	}
	return nil
}

// Rejected lists recorded rejections, newest first, at most limit (0 = all).
func (s *Store) Rejected(ctx context.Context, limit int) ([]Rejection, error) {
	var out []Rejection
	err := s.db.View(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketRejected).Cursor()
		for k, v := c.Last(); k != nil; k, v = c.Prev() {
			if err := ctx.Err(); err != nil {
				return err
			}
			var r Rejection
			if err := json.Unmarshal(v, &r); err != nil {
				return fmt.Errorf("decode rejection %x: %w", k, err)
			}
			out = append(out, r)
			if limit > 0 && len(out) >= limit {
				break
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("store: rejected: %w", err)
	}
	return out, nil
}

func seqKey(n uint64) []byte {
	k := make([]byte, 8)
	binary.BigEndian.PutUint64(k, n)
	return k
}
