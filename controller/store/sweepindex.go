package store

import (
	"encoding/binary"
	"encoding/json"
	"fmt"

	"github.com/vlmfleet/vlmfleet/protocol"
	bolt "go.etcd.io/bbolt"
)

// bucketSweepsByTime orders the sweeps by when they were made, for
// SweepsPage: key sweepTimeKey, value the sweep id. A sweep's id holds the
// time only to the second, and sweeps submitted within one second must
// still list in the order they were made.
var bucketSweepsByTime = []byte("sweeps_by_time")

// sweepTimeKey is created_at in nanoseconds, big-endian with the sign bit
// flipped so that bytes order as times do, then the id for uniqueness.
func sweepTimeKey(sw *protocol.Sweep) []byte {
	k := make([]byte, 8, 8+len(sw.ID))
	binary.BigEndian.PutUint64(k, uint64(sw.CreatedAt.UnixNano())^(1<<63))
	return append(k, sw.ID...)
}

func indexSweep(tx *bolt.Tx, sw *protocol.Sweep) error {
	if err := tx.Bucket(bucketSweepsByTime).Put(sweepTimeKey(sw), []byte(sw.ID)); err != nil {
		return fmt.Errorf("index sweep %s: %w", sw.ID, err)
	}
	return nil
}

// ensureSweepIndex builds the index at open when it is missing (a database
// of a build before it) or holds fewer sweeps than there are (one that such
// a build wrote to again since: sweeps are never deleted, so a count
// tells). The file's layout is otherwise unchanged, so an older build still
// reads it.
func ensureSweepIndex(tx *bolt.Tx) error {
	sb := tx.Bucket(bucketSweeps)
	if ib := tx.Bucket(bucketSweepsByTime); ib != nil {
		if ib.Stats().KeyN == sb.Stats().KeyN {
			return nil
		}
		if err := tx.DeleteBucket(bucketSweepsByTime); err != nil {
			return fmt.Errorf("store: rebuild the sweeps' index: %w", err)
		}
	}
	if _, err := tx.CreateBucket(bucketSweepsByTime); err != nil {
		return fmt.Errorf("store: create the sweeps' index: %w", err)
	}
	return sb.ForEach(func(k, v []byte) error {
		var sw protocol.Sweep
		if err := json.Unmarshal(v, &sw); err != nil {
			return fmt.Errorf("store: index sweep %s: %w", k, err)
		}
		sw.ID = string(k)
		return indexSweep(tx, &sw)
	})
}
