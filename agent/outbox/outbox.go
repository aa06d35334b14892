// Package outbox is the agent's durable spool of the messages that must not
// be lost (job states, results, its announcement). The agent appends each
// message to the spool, on disk and synced, and goes on measuring; one
// flusher publishes the spooled messages to JetStream in order and deletes
// each once the stream has acknowledged it. So a link that is down (a
// site cut off from the hub, a controller or NATS server that is away)
// stops no measurement, and an agent restarted meanwhile sends what its
// previous run left first. The message ids make a message sent twice (a
// crash between the ack and the delete) count once at the controller.
//
// Each message is a file of its own, written whole or not at all
// (internal/atomicfile) and named by its sequence number, so removing a
// sent message is one unlink and a crash can leave at most a temporary
// file, which Open deletes. A record that does not decode (cut short, or
// changed on disk) is set aside with a warning, never sent and never fatal.
package outbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/rs/zerolog"

	"github.com/vlmfleet/vlmfleet/internal/atomicfile"
	"github.com/vlmfleet/vlmfleet/internal/backoff"
)

// DefaultMaxBytes bounds the spool unless Options say otherwise. A result
// carries its request records (about 43 KiB for 60 requests), so 1 GiB is
// some 24,000 combinations, days of measuring, and still fits the smallest
// Jetson's storage.
const DefaultMaxBytes = 1 << 30

// publishTimeout bounds one publish attempt: an ack that does not come
// within it is waited for no longer, and the message is sent again.
const publishTimeout = 10 * time.Second

const (
	recordExt = ".msg"
	// badExt marks a record set aside because it does not decode.
	badExt   = ".bad"
	lockName = "lock"
)

// Publish sends one message and returns once the stream has acknowledged
// it.
type Publish func(ctx context.Context, subject, msgID string, data []byte) error

// Options configure an outbox.
type Options struct {
	// Dir holds the spool; it is made if missing. One agent process at a
	// time may use it (Open locks it).
	Dir string
	// MaxBytes bounds the spool's records (0: DefaultMaxBytes). A full
	// spool makes Append wait until the flusher has sent enough.
	MaxBytes int64
	Log      zerolog.Logger
}

// Outbox is an open spool.
type Outbox struct {
	dir  string
	max  int64
	log  zerolog.Logger
	lock *os.File

	// appendMu keeps records in the order of their sequence numbers.
	appendMu sync.Mutex

	mu      sync.Mutex
	pending []entry
	bytes   int64
	next    uint64 // the sequence number of the next record
	sent    uint64 // every record up to it is sent (or was set aside)
	changed chan struct{}
	// full is set while an Append waits for room, so that it is said once.
	full bool

	// endedMu orders the writes of the list of ended jobs (ended.go).
	endedMu sync.Mutex
	ended   []endedJob
}

type entry struct {
	seq  uint64
	size int64
}

// Open opens (or makes) the spool in opt.Dir and loads what a previous run
// left there, to be sent first. A spool that another user made or may
// write to is refused (SecureDir): what it holds is sent as the agent's.
func Open(opt Options) (*Outbox, error) {
	if opt.MaxBytes <= 0 {
		opt.MaxBytes = DefaultMaxBytes
	}
	dir, err := SecureDir(opt.Dir)
	if err != nil {
		return nil, fmt.Errorf("spool %s: %w", opt.Dir, err)
	}
	opt.Dir = dir
	lock, err := os.OpenFile(filepath.Join(opt.Dir, lockName), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("spool %s: %w", opt.Dir, err)
	}
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = lock.Close()
		return nil, fmt.Errorf("spool %s is in use by another agent process (two agents with one id, or one spool_dir for two agents?): %w", opt.Dir, err)
	}
	o := &Outbox{dir: opt.Dir, max: opt.MaxBytes, log: opt.Log, lock: lock, next: 1, changed: make(chan struct{})}
	if err := o.load(); err != nil {
		_ = lock.Close()
		return nil, err
	}
	if o.ended, err = loadEnded(filepath.Join(o.dir, endedName)); err != nil {
		o.log.Warn().Err(err).Msg("the spool's list of ended jobs is unreadable; starting with none")
	}
	return o, nil
}

// load reads the records a previous run left, in order, setting aside the
// ones that do not decode and deleting temporary files of writes a crash
// cut short.
func (o *Outbox) load() error {
	ents, err := os.ReadDir(o.dir)
	if err != nil {
		return fmt.Errorf("spool %s: %w", o.dir, err)
	}
	var last uint64
	for _, e := range ents {
		name := e.Name()
		if strings.HasPrefix(name, ".") && strings.HasSuffix(name, ".tmp") {
			_ = os.Remove(filepath.Join(o.dir, name))
			continue
		}
		seq, ok := recordSeq(name)
		if !ok || !e.Type().IsRegular() {
			continue
		}
		last = max(last, seq)
		path := filepath.Join(o.dir, name)
		b, err := os.ReadFile(path)
		if err == nil {
			_, err = decodeRecord(b)
		}
		if err != nil {
			o.setAside(path, err)
			continue
		}
		o.pending = append(o.pending, entry{seq: seq, size: int64(len(b))})
		o.bytes += int64(len(b))
	}
	slices.SortFunc(o.pending, func(a, b entry) int { return cmpSeq(a.seq, b.seq) })
	o.next = last + 1
	o.sent = o.next - 1
	if len(o.pending) > 0 {
		o.sent = o.pending[0].seq - 1
		o.log.Info().Int("messages", len(o.pending)).Int64("bytes", o.bytes).Str("spool", o.dir).
			Msg("messages left in the spool by the previous run; sending them first")
	}
	return nil
}

func cmpSeq(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func recordName(seq uint64) string { return fmt.Sprintf("%016x%s", seq, recordExt) }

func recordSeq(name string) (uint64, bool) {
	hex, ok := strings.CutSuffix(name, recordExt)
	if !ok || len(hex) != 16 {
		return 0, false
	}
	seq, err := strconv.ParseUint(hex, 16, 64)
	return seq, err == nil && seq > 0
}

// setAside renames a record that cannot be sent, keeping it for a look
// rather than deleting what may be someone's result.
func (o *Outbox) setAside(path string, cause error) {
	ev := o.log.Warn().Err(cause).Str("file", path)
	if errors.Is(cause, errTorn) {
		ev = ev.Str("why", "a write the agent's crash or a power loss cut short")
	}
	if err := os.Rename(path, path+badExt); err != nil {
		_ = os.Remove(path)
	}
	ev.Msg("spooled message does not decode; set aside (" + badExt + ") and not sent")
}

// Close releases the spool for another process; what is left stays for
// the next Open.
func (o *Outbox) Close() error { return o.lock.Close() }

// Dir is where the spool lives.
func (o *Outbox) Dir() string { return o.dir }

// Len says how many messages wait in the spool, and their size.
func (o *Outbox) Len() (messages int, bytes int64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.pending), o.bytes
}

// Append spools one message, synced to disk, and returns its sequence
// number. While the spool is full it waits for the flusher to make room
// (a message larger than the whole bound is taken when the spool is
// empty). A failing disk is retried, not given up on, until ctx ends.
func (o *Outbox) Append(ctx context.Context, subject, msgID string, data []byte) (uint64, error) {
	b, err := encodeRecord(record{subject: subject, msgID: msgID, data: data})
	if err != nil {
		return 0, fmt.Errorf("spool %s (%s): %w", subject, msgID, err)
	}
	o.appendMu.Lock()
	defer o.appendMu.Unlock()
	if err := o.waitRoom(ctx, int64(len(b))); err != nil {
		return 0, err
	}
	o.mu.Lock()
	seq := o.next
	o.mu.Unlock()
	path := filepath.Join(o.dir, recordName(seq))
	err = backoff.Default.Retry(ctx, func(attempt int) error {
		_, err := atomicfile.Write(path, 0o600, func(w io.Writer) error { _, err := w.Write(b); return err })
		if err == nil {
			err = syncDir(o.dir) // the rename, too, must survive a power loss
		}
		if err != nil && ctx.Err() == nil && (attempt == 1 || attempt%10 == 0) {
			o.log.Error().Err(err).Str("subject", subject).Int("attempt", attempt).Msg("cannot write to the spool; retrying")
		}
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("spool %s (%s): %w", subject, msgID, err)
	}
	o.mu.Lock()
	o.next++
	o.pending = append(o.pending, entry{seq: seq, size: int64(len(b))})
	o.bytes += int64(len(b))
	o.notifyLocked()
	o.mu.Unlock()
	return seq, nil
}

// waitRoom waits until size more bytes fit.
func (o *Outbox) waitRoom(ctx context.Context, size int64) error {
	began := time.Now()
	for {
		o.mu.Lock()
		if len(o.pending) == 0 || o.bytes+size <= o.max {
			if o.full {
				o.full = false
				o.log.Info().Dur("waited", time.Since(began)).Msg("the spool has room again; measuring goes on")
			}
			o.mu.Unlock()
			return nil
		}
		if !o.full {
			o.full = true
			o.log.Warn().Int("messages", len(o.pending)).Int64("bytes", o.bytes).Int64("max_bytes", o.max).Str("spool", o.dir).
				Msg("the spool is full: the job waits until the link to NATS is back and spooled messages are sent (nothing is dropped)")
		}
		ch := o.changed
		o.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Last is the sequence number of the last message appended (0: none).
func (o *Outbox) Last() uint64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.next - 1
}

// Wait waits until every message up to seq has been sent, or ctx ends.
func (o *Outbox) Wait(ctx context.Context, seq uint64) error {
	for {
		o.mu.Lock()
		done, ch := o.sent >= seq, o.changed
		o.mu.Unlock()
		if done {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (o *Outbox) notifyLocked() {
	close(o.changed)
	o.changed = make(chan struct{})
}

// Run is the flusher: it publishes the spooled messages in order, each
// until the stream acknowledges it, and deletes it then. It returns when
// ctx ends.
func (o *Outbox) Run(ctx context.Context, publish Publish) error {
	var behind time.Time // when the first publish of a backlog failed
	for {
		o.mu.Lock()
		var e entry
		ok := len(o.pending) > 0
		if ok {
			e = o.pending[0]
		}
		ch := o.changed
		o.mu.Unlock()
		if !ok {
			select {
			case <-ch:
				continue
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		path := filepath.Join(o.dir, recordName(e.seq))
		b, err := os.ReadFile(path)
		var r record
		if err == nil {
			r, err = decodeRecord(b)
		}
		if err != nil {
			o.setAside(path, err)
			o.done(e)
			continue
		}
		err = backoff.Default.Retry(ctx, func(attempt int) error {
			pctx, cancel := context.WithTimeout(ctx, publishTimeout)
			defer cancel()
			err := publish(pctx, r.subject, r.msgID, r.data)
			if err != nil && ctx.Err() == nil {
				if behind.IsZero() {
					behind = time.Now()
				}
				// Every tenth failure is enough to show that an outage goes on.
				if attempt == 1 || attempt%10 == 0 {
					n, size := o.Len()
					o.log.Warn().Err(err).Str("subject", r.subject).Int("attempt", attempt).Int("spooled", n).Int64("spooled_bytes", size).
						Msg("publish not acknowledged; the message stays in the spool and is sent again")
				}
			}
			return err
		})
		if err != nil {
			return err // only ctx ends it
		}
		if err := os.Remove(path); err != nil {
			// Sent again by the next run: the message id makes that harmless.
			o.log.Warn().Err(err).Str("file", path).Msg("cannot delete a sent message from the spool")
		}
		o.done(e)
		if !behind.IsZero() {
			if n, _ := o.Len(); n == 0 {
				o.log.Info().Dur("behind_for", time.Since(behind)).Msg("the spool is sent: every message is acknowledged again")
				behind = time.Time{}
			}
		}
	}
}

// done drops the first pending record, sent or set aside.
func (o *Outbox) done(e entry) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.pending = o.pending[1:]
	o.bytes -= e.size
	o.sent = e.seq
	o.notifyLocked()
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}
