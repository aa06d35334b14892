package controller

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/rs/zerolog"

	"github.com/vlmfleet/vlmfleet/controller/access"
	"github.com/vlmfleet/vlmfleet/controller/api"
	"github.com/vlmfleet/vlmfleet/controller/store"
	"github.com/vlmfleet/vlmfleet/internal/private"
)

// StoreFileName is the store's file in the data directory.
const StoreFileName = "vlmfleet.db"

// openStore makes the data directory (0700), or makes one that others may
// use private, and opens the store in it, telling the store what else in
// the directory shows that it held data: an empty store file beside
// JetStream data, the controller's keys or its token was emptied by a
// crash, not made new, and must not be served as if nothing had happened.
func openStore(dataDir string, log zerolog.Logger) (*store.Store, error) {
	if err := access.PrivateDir(dataDir, ownDataDir, log); err != nil {
		return nil, fmt.Errorf("controller: data directory: %w", err)
	}
	st, err := store.Open(filepath.Join(dataDir, StoreFileName), store.Options{PriorState: priorState(dataDir)})
	if err != nil {
		return nil, fmt.Errorf("controller: %w", err)
	}
	return st, nil
}

// ownDataDir says whether dir is a controller's data directory: it holds
// nothing, or something a controller keeps there.
func ownDataDir(dir string) bool {
	for _, name := range []string{StoreFileName, api.TokenFileName, ControllerSeedFile, access.TLSDirName, "nats"} {
		if _, err := os.Lstat(filepath.Join(dir, name)); err == nil {
			return true
		}
	}
	return private.Empty(dir)
}

// priorState names what in dataDir a controller makes only after its store
// exists (JetStream's data, its NATS key, its API token, its CA); "" when
// there is none of it.
func priorState(dataDir string) string {
	var found []string
	if hasFile(filepath.Join(dataDir, "nats")) {
		found = append(found, "nats/ holds JetStream data")
	}
	for _, name := range []string{ControllerSeedFile, api.TokenFileName, filepath.Join(access.TLSDirName, "ca-key.pem")} {
		if _, err := os.Lstat(filepath.Join(dataDir, name)); err == nil {
			found = append(found, name+" exists")
		}
	}
	return strings.Join(found, ", ")
}

// errFound ends the walk of hasFile at the first file.
var errFound = errors.New("found")

// hasFile says whether dir holds a regular file that is not empty.
func hasFile(dir string) bool {
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil && fi.Size() > 0 {
				return errFound
			}
		}
		return nil
	})
	return errors.Is(err, errFound)
}
