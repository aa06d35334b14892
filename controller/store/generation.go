package store

import bolt "go.etcd.io/bbolt"

// RunsGeneration changes whenever a write that can change what the runs
// read back (a result, an import, a run closed by its job's end) commits.
// Readers that derive something costly from all runs (the explorer's
// aggregate) keep it until the generation moves, instead of scanning the
// runs at every request. It counts from zero in each process, as such
// caches live in the process too.
func (s *Store) RunsGeneration() uint64 { return s.runsGen.Load() }

// runsChanged moves the generation once tx commits; a rolled-back write
// changes nothing and so must not invalidate anything.
func (s *Store) runsChanged(tx *bolt.Tx) {
	tx.OnCommit(func() { s.runsGen.Add(1) })
}
