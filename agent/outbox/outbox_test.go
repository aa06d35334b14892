package outbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func open(t *testing.T, dir string, maxBytes int64) (*Outbox, *logBuffer) {
	t.Helper()
	logs := &logBuffer{}
	o, err := Open(Options{Dir: dir, MaxBytes: maxBytes, Log: zerolog.New(logs)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = o.Close() })
	return o, logs
}

// logBuffer holds the outbox's log lines; the flusher writes while the
// test reads.
type logBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// sink is a Publish that records what it was given; while down is set it
// fails, as a publish over a cut link does.
type sink struct {
	mu   sync.Mutex
	down bool
	got  []string
}

func newSink() *sink { return &sink{} }

func (s *sink) publish(_ context.Context, subject, msgID string, data []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.down {
		return errors.New("no responders")
	}
	s.got = append(s.got, subject+" "+msgID+" "+string(data))
	return nil
}

func (s *sink) setDown(v bool) {
	s.mu.Lock()
	s.down = v
	s.mu.Unlock()
}

func (s *sink) messages() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.got...)
}

func run(o *Outbox, s *sink) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = o.Run(ctx, s.publish) }()
	return func() { cancel(); <-done }
}

func appendN(t *testing.T, o *Outbox, from, n int) {
	t.Helper()
	for i := from; i < from+n; i++ {
		if _, err := o.Append(testContext(t), "vlmfleet.agent.a1.result", fmt.Sprintf("m%d", i), []byte(fmt.Sprintf("data %d", i))); err != nil {
			t.Fatal(err)
		}
	}
}

func want(from, n int) []string {
	var w []string
	for i := from; i < from+n; i++ {
		w = append(w, fmt.Sprintf("vlmfleet.agent.a1.result m%d data %d", i, i))
	}
	return w
}

func records(t *testing.T, dir string) int {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, "*"+recordExt))
	if err != nil {
		t.Fatal(err)
	}
	return len(m)
}

// Messages spooled while the link is down are sent, in the order they
// were appended, once it is back, and each leaves the spool once sent.
func TestOutboxSendsInOrderOnceTheLinkIsBack(t *testing.T) {
	dir := t.TempDir()
	o, _ := open(t, dir, 0)
	s := newSink()
	s.setDown(true)
	stop := run(o, s)
	defer stop()
	appendN(t, o, 0, 20)
	if n, _ := o.Len(); n != 20 || records(t, dir) != 20 {
		t.Fatalf("%d messages spooled, %d files, want 20 while the link is down", n, records(t, dir))
	}
	s.setDown(false)
	if err := o.Wait(testContext(t), o.Last()); err != nil {
		t.Fatal(err)
	}
	if got := s.messages(); fmt.Sprint(got) != fmt.Sprint(want(0, 20)) {
		t.Errorf("sent %q,\nwant %q", got, want(0, 20))
	}
	if n, b := o.Len(); n != 0 || b != 0 || records(t, dir) != 0 {
		t.Errorf("after sending: %d messages, %d bytes, %d files left, want none", n, b, records(t, dir))
	}
}

// What an agent left in its spool (it stopped while the link was down) is
// sent first by the next one, before what it appends itself.
func TestOutboxSendsLeftoversFirstAfterARestart(t *testing.T) {
	dir := t.TempDir()
	o, _ := open(t, dir, 0)
	appendN(t, o, 0, 5) // no flusher: the link never came back
	if err := o.Close(); err != nil {
		t.Fatal(err)
	}

	o2, logs := open(t, dir, 0)
	if n, _ := o2.Len(); n != 5 {
		t.Fatalf("reopened spool has %d messages, want the 5 left", n)
	}
	appendN(t, o2, 5, 3)
	s := newSink()
	stop := run(o2, s)
	defer stop()
	if err := o2.Wait(testContext(t), o2.Last()); err != nil {
		t.Fatal(err)
	}
	if got := s.messages(); fmt.Sprint(got) != fmt.Sprint(want(0, 8)) {
		t.Errorf("sent %q,\nwant %q", got, want(0, 8))
	}
	if !strings.Contains(logs.String(), "left in the spool by the previous run") {
		t.Errorf("no log line about the leftovers: %s", logs)
	}
}

// A record cut short (a crash or power loss mid-write) and a temporary
// file of an unfinished write are found at Open: the torn record is set
// aside with a warning, the rest is sent, nothing crashes.
func TestOutboxDropsATornRecord(t *testing.T) {
	dir := t.TempDir()
	o, _ := open(t, dir, 0)
	appendN(t, o, 0, 3)
	if err := o.Close(); err != nil {
		t.Fatal(err)
	}
	last := filepath.Join(dir, recordName(3))
	b, err := os.ReadFile(last)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(last, b[:len(b)-7], 0o600); err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(dir, "."+recordName(4)+".123.tmp")
	if err := os.WriteFile(tmp, b[:5], 0o600); err != nil {
		t.Fatal(err)
	}

	o2, logs := open(t, dir, 0)
	if n, _ := o2.Len(); n != 2 {
		t.Fatalf("reopened spool has %d messages, want the 2 whole ones", n)
	}
	if !strings.Contains(logs.String(), "torn record") || !strings.Contains(logs.String(), "set aside") {
		t.Errorf("no warning about the torn record: %s", logs)
	}
	if _, err := os.Stat(last + badExt); err != nil {
		t.Errorf("the torn record was not set aside: %v", err)
	}
	if _, err := os.Stat(tmp); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the unfinished write's temporary file is still there: %v", err)
	}
	appendN(t, o2, 3, 1) // the new record does not reuse the torn one's number
	s := newSink()
	stop := run(o2, s)
	defer stop()
	if err := o2.Wait(testContext(t), o2.Last()); err != nil {
		t.Fatal(err)
	}
	if got, w := s.messages(), append(want(0, 2), want(3, 1)...); fmt.Sprint(got) != fmt.Sprint(w) {
		t.Errorf("sent %q,\nwant %q", got, w)
	}
}

// A full spool makes Append wait, saying so once, and lets it go on as
// soon as the flusher has made room: nothing is dropped.
func TestOutboxFullSpoolBlocksAndResumes(t *testing.T) {
	dir := t.TempDir()
	b, _ := encodeRecord(record{subject: "vlmfleet.agent.a1.result", msgID: "m0", data: []byte("data 0")})
	o, logs := open(t, dir, int64(3*len(b))) // three records fit
	s := newSink()
	s.setDown(true)
	stop := run(o, s)
	defer stop()
	appendN(t, o, 0, 3)

	appended := make(chan error, 1)
	go func() {
		_, err := o.Append(testContext(t), "vlmfleet.agent.a1.result", "m3", []byte("data 3"))
		appended <- err
	}()
	waitLog(t, logs, "the spool is full")
	select {
	case err := <-appended:
		t.Fatalf("Append returned (%v) while the spool was full", err)
	default:
	}
	s.setDown(false)
	if err := <-appended; err != nil {
		t.Fatal(err)
	}
	if err := o.Wait(testContext(t), o.Last()); err != nil {
		t.Fatal(err)
	}
	if got := s.messages(); fmt.Sprint(got) != fmt.Sprint(want(0, 4)) {
		t.Errorf("sent %q,\nwant %q", got, want(0, 4))
	}
	if !strings.Contains(logs.String(), "room again") {
		t.Errorf("no log line when the spool had room again: %s", logs)
	}
}

// An Append waiting for room ends with its context (the agent stopping).
func TestOutboxFullSpoolAppendEndsWithItsContext(t *testing.T) {
	b, _ := encodeRecord(record{subject: "vlmfleet.agent.a1.result", msgID: "m0", data: []byte("data 0")})
	o, _ := open(t, t.TempDir(), int64(len(b)))
	appendN(t, o, 0, 1)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := o.Append(ctx, "vlmfleet.agent.a1.result", "m1", []byte("data 1")); !errors.Is(err, context.Canceled) {
		t.Errorf("Append on a full spool with its context ended: %v, want context.Canceled", err)
	}
}

// One spool serves one agent process: a second Open is refused with a
// message that says why.
func TestOutboxRefusesASecondProcess(t *testing.T) {
	dir := t.TempDir()
	open(t, dir, 0)
	_, err := Open(Options{Dir: dir})
	if err == nil || !strings.Contains(err.Error(), "in use by another agent process") {
		t.Errorf("second Open: %v, want it refused as in use", err)
	}
}

// waitLog polls for a log line: the wait for room has no other sign.
func waitLog(t *testing.T, logs *logBuffer, s string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if strings.Contains(logs.String(), s) {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("no log line %q: %s", s, logs)
}
