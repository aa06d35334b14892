package explorer

import (
	"context"
	"sync"

	"github.com/vlmfleet/vlmfleet/protocol"
)

// Generational is a RunSource that says when its runs change (the
// controller's store: store.Store.RunsGeneration). The explorer keeps the
// aggregate of such a source, and the answers derived from it, until the
// generation moves; a source without it is aggregated at every request.
type Generational interface {
	RunsGeneration() uint64
}

// snapshot is everything the explorer derives from one generation of the
// runs: the dataset with its regression markers, the measured profile
// lines, and the encoded answers, each made at its first request.
type snapshot struct {
	gen uint64
	ds  Dataset
	// profiles is the runs' measured profile lines (profiles.Measured).
	profiles []protocol.ProfileRow
	// partial is set when a regression marker could not be computed: the
	// snapshot answers the request that built it and is not kept.
	partial bool

	mu      sync.Mutex
	answers map[string]*answer
}

// maxCachedAnswers bounds the encoded answers kept per generation (the
// data, its gzip, the rows at each query and page asked); past it, they are
// encoded afresh at each request rather than kept.
const maxCachedAnswers = 256

// answer is one encoded response body, made once by whoever asks first.
type answer struct {
	once sync.Once
	body []byte
	err  error
}

// encoded returns the body cached under key, made by mk at the first
// request for it; concurrent first requests wait for the one making it.
func (s *snapshot) encoded(key string, mk func() ([]byte, error)) ([]byte, error) {
	s.mu.Lock()
	a, ok := s.answers[key]
	if !ok {
		if len(s.answers) >= maxCachedAnswers {
			s.mu.Unlock()
			return mk()
		}
		if s.answers == nil {
			s.answers = map[string]*answer{}
		}
		a = &answer{}
		s.answers[key] = a
	}
	s.mu.Unlock()
	a.once.Do(func() { a.body, a.err = mk() })
	return a.body, a.err
}

// datasetCache holds the latest snapshot. Requests that miss it at the
// same time wait for one build instead of each reading every run.
type datasetCache struct {
	mu       sync.Mutex
	cur      *snapshot
	building chan struct{} // closed when the build in progress ends; nil when none runs
}

// get returns the snapshot of generation gen, building it with build when
// the one held is of another generation. gen must be read before build
// reads the runs, so that a write that commits meanwhile moves the
// generation past the snapshot and the next request builds again: a
// snapshot is never older than the generation it is filed under.
func (c *datasetCache) get(ctx context.Context, gen uint64, build func(ctx context.Context) (*snapshot, error)) (*snapshot, error) {
	for {
		c.mu.Lock()
		if c.cur != nil && c.cur.gen == gen {
			s := c.cur
			c.mu.Unlock()
			return s, nil
		}
		if wait := c.building; wait != nil {
			c.mu.Unlock()
			select {
			case <-wait:
				// Built, perhaps for an older generation, or failed: look again.
				continue
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		done := make(chan struct{})
		c.building = done
		c.mu.Unlock()

		s, err := build(ctx)

		c.mu.Lock()
		if err == nil && !s.partial && (c.cur == nil || s.gen >= c.cur.gen) {
			c.cur = s
		}
		c.building = nil
		close(done)
		c.mu.Unlock()
		return s, err
	}
}
