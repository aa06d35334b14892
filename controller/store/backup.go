package store

import (
	"fmt"
	"io"

	bolt "go.etcd.io/bbolt"
)

// Backup writes a consistent copy of the whole database to w and returns
// its size. It reads in one read transaction, so the copy is the database
// as one moment saw it while writes go on: the copy is a database file that
// Open takes as it is.
func (s *Store) Backup(w io.Writer, size func(int64)) (int64, error) {
	var n int64
	err := s.db.View(func(tx *bolt.Tx) error {
		if size != nil {
			size(tx.Size())
		}
		var err error
		n, err = tx.WriteTo(w)
		return err
	})
	if err != nil {
		return n, fmt.Errorf("store: backup of %s: %w", s.path, err)
	}
	return n, nil
}

// Size is the database's size in bytes as a read transaction sees it.
func (s *Store) Size() (int64, error) {
	var n int64
	err := s.db.View(func(tx *bolt.Tx) error {
		n = tx.Size()
		return nil
	})
	return n, err
}
