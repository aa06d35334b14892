package store

import (
	"errors"
	"fmt"
	"time"

	"github.com/vlmfleet/vlmfleet/protocol"
	bolt "go.etcd.io/bbolt"
)

// ImportEntry is one result document to import and where it came from.
type ImportEntry struct {
	Origin string       `json:"origin"`
	Run    protocol.Run `json:"run"`
}

// ImportError names the entry that stopped an import.
type ImportError struct {
	Index  int
	Origin string
	Err    error
}

func (e *ImportError) Error() string {
	if e.Origin == "" {
		return fmt.Sprintf("runs[%d]: %v", e.Index, e.Err)
	}
	return fmt.Sprintf("runs[%d] (origin %s): %v", e.Index, e.Origin, e.Err)
}

func (e *ImportError) Unwrap() error { return e.Err }

// ImportRuns stores result documents from elsewhere (bench files, another
// controller) in one transaction: if any entry is invalid nothing is stored.
// Each run is stored with Source "import" and Origin "<origin> (<original
// source>)". Importing a run id again replaces the earlier import (so
// re-importing a file is harmless); a run id that this controller measured
// itself is refused, because the import would overwrite lab data.
func (s *Store) ImportRuns(entries []ImportEntry) ([]string, error) {
	if len(entries) == 0 {
		return nil, errors.New("store: import: no runs given")
	}
	ids := make([]string, 0, len(entries))
	seen := map[string]int{}
	var prep Preparer
	err := s.db.Update(func(tx *bolt.Tx) error {
		s.runsChanged(tx)
		rb := tx.Bucket(bucketRuns)
		now := time.Now().UTC()
		for i, e := range entries {
			fail := func(err error) error { return &ImportError{Index: i, Origin: e.Origin, Err: err} }
			r := e.Run
			if r.Schema == 0 {
				r.Schema = protocol.SchemaVersion
			}
			if r.Schema > protocol.SchemaVersion {
				return fail(fmt.Errorf("schema %d, this build reads schema 1..%d", r.Schema, protocol.SchemaVersion))
			}
			if err := r.Validate(); err != nil {
				return fail(err)
			}
			if j, dup := seen[r.ID]; dup {
				return fail(fmt.Errorf("run id %s is also runs[%d] of this import", r.ID, j))
			}
			seen[r.ID] = i
			var old runRecord
			exists, err := getJSON(rb, r.ID, &old)
			if err != nil {
				return fail(err)
			}
			if exists && old.Run.Source != protocol.SourceImport {
				return fail(fmt.Errorf("run id %s already exists here as a %s run (agent %s); it is already in this controller", r.ID, old.Run.Source, old.Run.AgentID))
			}
			if exists {
				if err := deleteRunParts(tx, r.ID); err != nil {
					return fail(err)
				}
				s.runReplaced(tx)
			}
			src := r.Source
			r.Source = protocol.SourceImport
			r.Origin = e.Origin
			if src != "" {
				r.Origin = e.Origin + " (" + src + ")"
			}
			combos := r.Combinations
			r.Combinations = nil
			rec := runRecord{Run: r, Final: r.Status != protocol.RunRunning, Expected: len(combos), UpdatedAt: now}
			if err := putJSON(rb, r.ID, &rec); err != nil {
				return fail(err)
			}
			var parts runParts
			for _, c := range combos {
				key, combo, reqs, err := prep.combination(c, nil, nil)
				if err == nil {
					err = putRecords(tx, r.ID, &parts, key, combo, reqs)
				}
				if err != nil {
					return fail(err)
				}
			}
			ids = append(ids, r.ID)
		}
		return nil
	})
	if err != nil {
		var ie *ImportError
		if errors.As(err, &ie) {
			return nil, ie
		}
		return nil, fmt.Errorf("store: import: %w", err)
	}
	return ids, nil
}

func deleteRunParts(tx *bolt.Tx, id string) error {
	for _, name := range [][]byte{bucketCombos, bucketRequests} {
		b := tx.Bucket(name)
		if b.Bucket([]byte(id)) != nil {
			if err := b.DeleteBucket([]byte(id)); err != nil {
				return fmt.Errorf("delete %s of %s: %w", name, id, err)
			}
		}
	}
	return nil
}
