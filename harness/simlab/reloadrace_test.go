package simlab_test

import (
	"bufio"
	"io"
	"net"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/vlmfleet/vlmfleet/harness/simlab"
)

// refusingLink is a TCP proxy on loopback before a NATS server that
// answers its first connections as the embedded server does while it
// reloads its users for another agent's enrolment: it passes the server's
// INFO and refuses the client's CONNECT with "Authorization Violation".
// Later connections pass through.
type refusingLink struct {
	ln     net.Listener
	target string

	mu      sync.Mutex
	refuse  int // connections still to refuse
	refused int
	conns   []net.Conn
}

func newRefusingLink(t *testing.T, target string, refuse int) *refusingLink {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &refusingLink{ln: ln, target: target, refuse: refuse}
	go p.accept()
	t.Cleanup(func() {
		_ = ln.Close()
		p.mu.Lock()
		defer p.mu.Unlock()
		for _, c := range p.conns {
			_ = c.Close()
		}
	})
	return p
}

func (p *refusingLink) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		up, err := net.Dial("tcp", p.target)
		if err != nil {
			_ = c.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, c, up)
		refuse := p.refuse > 0
		if refuse {
			p.refuse--
		}
		p.mu.Unlock()
		if refuse {
			go p.refuseOne(c, up)
			continue
		}
		go func() { _, _ = io.Copy(c, up); _ = c.Close() }()
		go func() { _, _ = io.Copy(up, c); _ = up.Close() }()
	}
}

// refuseOne passes the server's INFO line, reads the client's CONNECT line
// and answers it as a server that does not know the client's key.
func (p *refusingLink) refuseOne(c, up net.Conn) {
	defer func() { _ = c.Close(); _ = up.Close() }()
	info, err := bufio.NewReader(up).ReadString('\n')
	if err != nil {
		return
	}
	if _, err := io.WriteString(c, info); err != nil {
		return
	}
	if _, err := bufio.NewReader(c).ReadString('\n'); err != nil {
		return
	}
	// Counted before the client reads it: the client may connect again
	// and announce itself, which the test waits for, before this goroutine
	// runs again.
	p.mu.Lock()
	p.refused++
	p.mu.Unlock()
	_, _ = io.WriteString(c, "-ERR 'Authorization Violation'\r\n")
}

func (p *refusingLink) refusals() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.refused
}

// An agent refused while the controller's NATS server reloads its users
// (another agent being enrolled at that moment) is not taken for revoked
// at once: it tries again, connects and announces itself. Before, one such
// refusal stopped the agent for good (4 of 50 in a soak that started each
// agent right after enrolling it).
func TestAgentRefusedDuringAUsersReloadConnects(t *testing.T) {
	l := newLab(t, testContext(t, 60*time.Second), simlab.Options{})
	seed, err := l.Controller().EnrolAgent(l.ctx, "late")
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(l.Controller().NATSURL())
	if err != nil {
		t.Fatal(err)
	}
	if u.Scheme != "nats" {
		t.Skipf("the lab's NATS URL is %s; this proxy speaks plain NATS only", u.Scheme)
	}
	p := newRefusingLink(t, u.Host, 2)
	d := agx("late")
	d.NATSURL, d.NATSSeed = "nats://"+p.ln.Addr().String(), seed
	l.startAgent(d)
	if n := p.refusals(); n != 2 {
		t.Fatalf("the proxy refused %d connections, want 2", n)
	}
}
