package access

import (
	"net"
	"net/http"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Bounds on POST /api/join: each address may try JoinBurst times at once,
// then once per joinEvery; all addresses together joinGlobalRate a second.
// A lab enrolling its devices stays far below either; a guesser of
// secrets gets a few tries a minute, against 256 bits.
const (
	JoinBurst       = 10
	joinEvery       = 6 * time.Second
	joinGlobalRate  = 5
	joinGlobalBurst = 50
	// joinMaxAddrs bounds the addresses remembered: beyond it, those
	// whose allowance is whole again are forgotten.
	joinMaxAddrs = 4096
)

// JoinLimiter rate-limits joins by the client's address.
type JoinLimiter struct {
	mu     sync.Mutex
	byAddr map[string]*rate.Limiter
	global *rate.Limiter
}

// NewJoinLimiter is a limiter that has seen no join.
func NewJoinLimiter() *JoinLimiter {
	return &JoinLimiter{byAddr: map[string]*rate.Limiter{}, global: rate.NewLimiter(joinGlobalRate, joinGlobalBurst)}
}

// Allow says whether a join from r's address may go ahead now, and if
// not, after how long to try again.
func (l *JoinLimiter) Allow(r *http.Request) (bool, time.Duration) {
	addr, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		addr = r.RemoteAddr
	}
	now := time.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	lim, ok := l.byAddr[addr]
	if !ok {
		if len(l.byAddr) >= joinMaxAddrs {
			l.forgetIdle(now)
		}
		if len(l.byAddr) >= joinMaxAddrs {
			return false, joinEvery
		}
		lim = rate.NewLimiter(rate.Every(joinEvery), JoinBurst)
		l.byAddr[addr] = lim
	}
	if !lim.AllowN(now, 1) {
		return false, time.Duration((1 - lim.TokensAt(now)) * float64(joinEvery))
	}
	if !l.global.AllowN(now, 1) {
		return false, time.Second
	}
	return true, 0
}

// forgetIdle drops the addresses whose allowance is whole again: they
// would be made the same anew.
func (l *JoinLimiter) forgetIdle(now time.Time) {
	for a, lim := range l.byAddr {
		if lim.TokensAt(now) >= JoinBurst {
			delete(l.byAddr, a)
		}
	}
}
