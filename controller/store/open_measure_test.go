package store

import (
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/vlmfleet/vlmfleet/protocol"
	bolt "go.etcd.io/bbolt"
)

// What the checks at open cost on a store of realistic size, for
// docs/operations.md: bbolt's own open (which walks every page to rebuild
// its free list), Open after a clean stop (the pages read once more first)
// and Open after an unclean one (bbolt's consistency check too).
// VLMFLEET_MEASURE_STORE_MB sets the size (default 256).
func TestMeasureOpenChecks(t *testing.T) {
	if os.Getenv("VLMFLEET_MEASURE") == "" {
		t.Skip("a measurement for docs/operations.md; set VLMFLEET_MEASURE=1 to run it")
	}
	mb := 256
	if v := os.Getenv("VLMFLEET_MEASURE_STORE_MB"); v != "" {
		mb, _ = strconv.Atoi(v)
	}
	path := filepath.Join(t.TempDir(), "vlmfleet.db")
	fillStore(t, path, int64(mb)<<20)
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	best := func(f func()) time.Duration {
		var min time.Duration
		for range 3 {
			began := time.Now()
			f()
			if d := time.Since(began); min == 0 || d < min {
				min = d
			}
		}
		return min
	}
	boltOpen := func() {
		db, err := bolt.Open(path, 0o600, &bolt.Options{FreelistType: bolt.FreelistMapType, NoFreelistSync: true})
		if err != nil {
			t.Fatal(err)
		}
		_ = db.Close()
	}
	bare := best(boltOpen)
	open := func(unclean bool) func() {
		return func() {
			if unclean {
				if err := os.WriteFile(path+".pid", []byte("1\n"), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			s, err := Open(path, Options{})
			if err != nil {
				t.Fatal(err)
			}
			_ = s.Close()
		}
	}
	clean, unclean := best(open(false)), best(open(true))
	t.Logf("store %d MiB, page cache warm: bbolt's open %s; Open after a clean stop %s; after an unclean stop (tx.Check) %s (best of 3)",
		fi.Size()>>20, bare.Round(time.Millisecond), clean.Round(time.Millisecond), unclean.Round(time.Millisecond))
	// As after a reboot: the file's pages dropped from the page cache.
	cold := func(f func()) func() {
		return func() {
			evict(t, path)
			f()
		}
	}
	t.Logf("store %d MiB, file evicted from the page cache before each: bbolt's open %s; Open after a clean stop %s; after an unclean stop %s (best of 3)",
		fi.Size()>>20, best(cold(boltOpen)).Round(time.Millisecond), best(cold(open(false))).Round(time.Millisecond), best(cold(open(true))).Round(time.Millisecond))
}

// evict drops path's pages from the page cache.
func evict(t *testing.T, path string) {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	const dontNeed = 4 // POSIX_FADV_DONTNEED
	if _, _, errno := syscall.Syscall6(syscall.SYS_FADVISE64, f.Fd(), 0, 0, dontNeed, 0, 0); errno != 0 {
		t.Fatal(errno)
	}
}

// fillStore writes runs with request records through ImportRuns until the
// file reaches size bytes.
func fillStore(t *testing.T, path string, size int64) {
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rng := rand.New(rand.NewSource(1))
	for n := 0; ; n++ {
		if got, err := s.Size(); err != nil || got >= size {
			return
		}
		var entries []ImportEntry
		for i := range 50 {
			r := testRun(fmt.Sprintf("r-%05d-%02d", n, i), fmt.Sprintf("agent-%02d", i%20))
			r.Status, r.FinishedAt = protocol.RunCompleted, r.CreatedAt
			for _, size := range []string{"480p", "720p", "1080p", "2K"} {
				c := seriesCombo(size, 60)
				c.Completed = 60
				c.Requests = nil
				for q := range 60 {
					c.Requests = append(c.Requests, protocol.RequestRecord{Camera: q % 4, Seq: q, Start: rng.Float64() * 60,
						TTFB: rng.Float64(), TTFT: rng.Float64(), LastToken: rng.Float64() * 5, E2E: rng.Float64() * 6,
						CompletionTokens: 100 + rng.Intn(100), PromptTokens: 1000 + rng.Intn(500), TPS: rng.Float64() * 40, ITL: rng.Float64() / 10})
				}
				r.Combinations = append(r.Combinations, *c)
			}
			entries = append(entries, ImportEntry{Origin: "measure", Run: r})
		}
		if _, err := s.ImportRuns(entries); err != nil {
			t.Fatal(err)
		}
	}
}
