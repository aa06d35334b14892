// Package testutil holds the few helpers that tests of several packages
// share. Only tests import it.
package testutil

import (
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nkeys"
)

// Returned waits for what a goroutine sends on done once its context has
// ended: an error fails the test, and so does nothing within 10 s. what
// names the function the goroutine ran.
func Returned(t testing.TB, done <-chan error, what string) {
	t.Helper()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("%s: %v", what, err)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("%s did not return after its context ended", what)
	}
}

// NewRequest is a request of method to url, with body unless it is "";
// an error fails the test.
func NewRequest(t testing.TB, method, url, body string) *http.Request {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, r)
	if err != nil {
		t.Fatal(err)
	}
	return req
}

// Status sends method to url, with body unless it is "", and returns the
// response's status code; the response body is closed unread.
func Status(t testing.TB, method, url, body string) int {
	t.Helper()
	res, err := http.DefaultClient.Do(NewRequest(t, method, url, body))
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	res.Body.Close()
	return res.StatusCode
}

// WriteFile writes content to the file at path, readable by all, and
// returns path; an error fails the test.
func WriteFile(t testing.TB, path, content string) string {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// WantError fails the test unless err is an error whose message contains
// want.
func WantError(t testing.TB, err error, want string) {
	t.Helper()
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("error %v, want one containing %q", err, want)
	}
}

// ClosedAddr is a loopback address that nothing listens on: a port the
// system handed out, closed again.
func ClosedAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// ConnectJS connects to the NATS server at url and opens JetStream on the
// connection, which is closed when the test ends.
func ConnectJS(t testing.TB, url string, opts ...nats.Option) (*nats.Conn, jetstream.JetStream) {
	t.Helper()
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		t.Fatalf("connect to %s: %v", url, err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return nc, js
}

// NewUser creates an nkey user and returns its seed and public key; an
// error fails the test.
func NewUser(t testing.TB) (seed, pub string) {
	t.Helper()
	kp, err := nkeys.CreateUser()
	var s []byte
	if err == nil {
		s, err = kp.Seed()
	}
	if err == nil {
		pub, err = kp.PublicKey()
	}
	if err != nil {
		t.Fatalf("create an nkey user: %v", err)
	}
	return string(s), pub
}

// NkeySeed is the option that signs a connection in with the nkey seed.
func NkeySeed(t testing.TB, seed string) nats.Option {
	t.Helper()
	kp, err := nkeys.FromSeed([]byte(seed))
	if err != nil {
		t.Fatal(err)
	}
	pub, err := kp.PublicKey()
	if err != nil {
		t.Fatal(err)
	}
	return nats.Nkey(pub, kp.Sign)
}

// NkeyFile is the option that signs a connection in with the nkey seed in
// file, such as a controller's NATSSeedFile (every permission).
func NkeyFile(t testing.TB, file string) nats.Option {
	t.Helper()
	opt, err := nats.NkeyOptionFromSeed(file)
	if err != nil {
		t.Fatal(err)
	}
	return opt
}

// ProcessCPU is the CPU time this process has used, user and system.
func ProcessCPU(t testing.TB) time.Duration {
	t.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// ProcStatusKB is a figure of this process's /proc/self/status in KiB
// (field as it is named there, e.g. VmRSS, VmHWM), 0 where there is none.
func ProcStatusKB(field string) int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			if f := strings.Fields(v); len(f) > 0 {
				n, _ := strconv.ParseInt(f[0], 10, 64)
				return n
			}
		}
	}
	return 0
}

// SameAsContract checks that copyPath, a contract's copy kept in the
// repository so that a fresh clone tests against it, equals the contract
// that environment variable envVar names (scripts/test sets it from the
// shared folder beside the checkout); without one the test is skipped.
func SameAsContract(t testing.TB, copyPath, envVar string) {
	t.Helper()
	contract := os.Getenv(envVar)
	if contract == "" {
		t.Skip(envVar + " names no contract to compare the copy with")
	}
	shared, err := os.ReadFile(contract)
	if err != nil {
		t.Fatalf("%s: %v", envVar, err)
	}
	copied, err := os.ReadFile(copyPath)
	if err != nil {
		t.Fatal(err)
	}
	if string(shared) != string(copied) {
		t.Fatalf("%s differs from %s: copy the contract again", copyPath, contract)
	}
}
