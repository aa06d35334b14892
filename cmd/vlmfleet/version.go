package main

import (
	"cmp"
	"fmt"
	"runtime/debug"
)

// buildInfo is what `vlmfleet version` prints.
type buildInfo struct {
	Version, Commit, Date string
	// Modified is true when the checkout had uncommitted changes.
	Modified bool
}

func (b buildInfo) String() string {
	commit := cmp.Or(b.Commit, "unknown")
	if b.Modified {
		commit += " (modified)"
	}
	return fmt.Sprintf("vlmfleet %s\ncommit %s\nbuilt  %s", b.Version, commit, cmp.Or(b.Date, "unknown"))
}

// buildVersion is the version, commit and date given with -ldflags, each
// else what the Go toolchain recorded: the module version of a `go
// install`, the VCS revision and commit time of a build in a checkout.
func buildVersion(version, commit, date string) buildInfo {
	b := buildInfo{Version: version, Commit: commit, Date: date}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return b
	}
	if v := info.Main.Version; (b.Version == "" || b.Version == "dev") && v != "" && v != "(devel)" {
		b.Version = v
	}
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			b.Commit = cmp.Or(b.Commit, s.Value)
		case "vcs.time":
			b.Date = cmp.Or(b.Date, s.Value)
		case "vcs.modified":
			b.Modified = commit == "" && s.Value == "true"
		}
	}
	b.Version = cmp.Or(b.Version, "dev")
	return b
}
