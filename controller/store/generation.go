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

// RunsReplaced changes whenever an import that replaced a stored run (the
// same run id imported again) commits: what was derived from that run's
// records, such as a regression verdict, is stale, although a completed
// run's records otherwise never change.
func (s *Store) RunsReplaced() uint64 { return s.runsReplaced.Load() }

// runReplaced moves RunsReplaced once tx commits.
func (s *Store) runReplaced(tx *bolt.Tx) {
	tx.OnCommit(func() { s.runsReplaced.Add(1) })
}
