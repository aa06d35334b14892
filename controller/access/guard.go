package access

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"time"

	"github.com/rs/zerolog"
	"github.com/vlmfleet/vlmfleet/controller/api"
	"github.com/vlmfleet/vlmfleet/internal/loopback"
)

// sessionCookie carries the read session of a browser that opened /login:
// readSession's value, which authorises reads only. It is not the token,
// so that a cookie read off a browser's profile cannot make a change.
const sessionCookie = "vlmfleet_session"

// Guard is the room of HTTP access: what every HTTP request passes before
// its handler (see Handler), and the bound on concurrent imports.
type Guard struct {
	token      string
	tokenSum   [32]byte
	sessionSum [32]byte
	tokenFile  string
	// publicRead opens reads without the token on any address.
	publicRead bool
	// Hosts are the configured names (Options.HTTPHosts, the name in
	// Options.HTTPAddr): "name" matches any port, "name:port" one port.
	Hosts []string
	// readsNeedToken is set by Listening: the listener is not on loopback
	// and reads were not made public.
	readsNeedToken bool
	// Imports holds a place for each import running.
	Imports chan struct{}
	// bodyStall and bodyMinRate bound how slowly a request body may
	// arrive (deadlineBody).
	bodyStall   time.Duration
	bodyMinRate int64
}

// NewGuard is the guard of opt's HTTP API; it reads the API token, or
// makes it at the first start.
func NewGuard(opt Options, log zerolog.Logger) (*Guard, error) {
	token, file, err := loadAPIToken(opt, log)
	if err != nil {
		return nil, err
	}
	s := &Guard{token: token, tokenSum: sha256.Sum256([]byte(token)), tokenFile: file,
		publicRead: opt.PublicRead, Imports: make(chan struct{}, api.MaxConcurrentImports)}
	s.sessionSum = sha256.Sum256([]byte(readSession(token)))
	s.bodyStall, s.bodyMinRate = opt.BodyStallTimeout, int64(opt.BodyMinRate)
	if s.bodyStall <= 0 {
		s.bodyStall = defaultBodyStall
	}
	if s.bodyMinRate <= 0 {
		s.bodyMinRate = defaultBodyMinRate
	}
	names := opt.HTTPHosts
	if h, _, err := net.SplitHostPort(opt.HTTPAddr); err == nil && h != "" {
		if _, err := netip.ParseAddr(h); err != nil {
			names = append(names[:len(names):len(names)], h) // a name to listen on is one to serve
		}
	}
	for _, n := range names {
		n = NormalHost(n)
		if _, _, err := net.SplitHostPort(n); err != nil {
			n = HostOnly(n) // no port: any port
		}
		if n == "" || strings.ContainsAny(n, "/ ") {
			return nil, fmt.Errorf("controller: HTTPHosts: %q: want a host name, optionally with a port", n)
		}
		s.Hosts = append(s.Hosts, n)
	}
	return s, nil
}

// Listening records where the HTTP listener is: off loopback, reads need
// the token unless publicRead.
func (s *Guard) Listening(a net.Addr) {
	tcp, ok := a.(*net.TCPAddr)
	s.readsNeedToken = !s.publicRead && !(ok && tcp.IP.IsLoopback())
}

// Handler sets the security headers of every answer (SecurityHeaders), then
// checks, in this order, for every request: the Host header (421
// unless one this controller serves: DNS rebinding); for a change (any
// method but GET, HEAD and OPTIONS) the origin (403 from another site:
// cross-site request forgery), the token (401; POST /api/join carries a
// join token's secret instead) and a JSON body (415), and
// gives the body its read deadline (deadlineBody); for
// a read on a controller off loopback without --public-read, the token
// from the header or the /login cookie (401). GET /login?token= sets
// that cookie, whose value is a read session, not the token.
func (s *Guard) Handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		SecurityHeaders(w.Header())
		if !s.hostAllowed(r) {
			api.WriteError(w, http.StatusMisdirectedRequest, fmt.Errorf("this controller does not serve host %q; if it should, start it with --http-host %s", r.Host, HostOnly(r.Host)))
			return
		}
		if r.URL.Path == "/login" {
			s.handleLogin(w, r)
			return
		}
		switch r.Method {
		case http.MethodGet, http.MethodHead, http.MethodOptions:
			if s.readsNeedToken && !s.BearerOK(r) && !s.cookieOK(r) {
				s.Unauthorized(w, r, "reading this controller needs its API token (in a browser, open /login?token=TOKEN once; or start the controller with --public-read)")
				return
			}
		default:
			if err := s.checkOrigin(r); err != nil {
				api.WriteError(w, http.StatusForbidden, err)
				return
			}
			// A join is authenticated by its join token's secret instead.
			if !s.BearerOK(r) && !IsJoin(r) {
				s.Unauthorized(w, r, "a change needs the controller's API token")
				return
			}
			if err := checkJSONBody(r); err != nil {
				api.WriteError(w, http.StatusUnsupportedMediaType, err)
				return
			}
			s.withBodyDeadline(w, r)
		}
		next.ServeHTTP(w, r)
	})
}

// Unauthorized answers 401: what needs the token, and how to send it.
func (s *Guard) Unauthorized(w http.ResponseWriter, r *http.Request, what string) {
	if r.Header.Get("Authorization") != "" {
		what = "the API token does not match the controller's; " + what
	}
	w.Header().Set("WWW-Authenticate", `Bearer realm="vlmfleet"`)
	api.WriteError(w, http.StatusUnauthorized, fmt.Errorf(`%s: send "Authorization: Bearer TOKEN" with the token from <data-dir>/%s on the controller's host`, what, api.TokenFileName))
}

// tokenOK compares in constant time.
func (s *Guard) tokenOK(got string) bool { return secretIs(got, s.tokenSum) }

// secretIs says whether got is the non-empty secret whose SHA-256 is sum,
// in time that does not depend on where they differ.
func secretIs(got string, sum [32]byte) bool {
	gotSum := sha256.Sum256([]byte(got))
	return got != "" && subtle.ConstantTimeCompare(gotSum[:], sum[:]) == 1
}

// BearerOK says whether r carries the API token as its bearer.
func (s *Guard) BearerOK(r *http.Request) bool {
	scheme, tok, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	return ok && strings.EqualFold(scheme, "Bearer") && s.tokenOK(strings.TrimSpace(tok))
}

func (s *Guard) cookieOK(r *http.Request) bool {
	c, err := r.Cookie(sessionCookie)
	return err == nil && secretIs(c.Value, s.sessionSum)
}

// readSession is the value of the /login cookie: an HMAC of a fixed
// purpose under the token. It reads as the token does until the token
// changes, and says nothing of the token; a bearer of it is refused
// (BearerOK takes the token only), so it can never make a change.
func readSession(token string) string {
	m := hmac.New(sha256.New, []byte(token))
	m.Write([]byte("vlmfleet read-only page session"))
	return hex.EncodeToString(m.Sum(nil))
}

// handleLogin answers GET /login?token=TOKEN with the cookie that lets this
// browser read the controller (a read session, not the token), and sends
// it to the explorer.
func (s *Guard) handleLogin(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		w.Header().Set("Allow", http.MethodGet)
		api.WriteError(w, http.StatusMethodNotAllowed, errors.New("GET /login?token=TOKEN"))
		return
	}
	tok := r.URL.Query().Get("token")
	if !s.tokenOK(tok) {
		s.Unauthorized(w, r, "GET /login?token=TOKEN needs the controller's API token")
		return
	}
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: readSession(tok), Path: "/", HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
	w.Header().Set("Cache-Control", "no-store")
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

// hostAllowed: loopback names and addresses, the address the request
// arrived on, and the configured names.
func (s *Guard) hostAllowed(r *http.Request) bool {
	h := NormalHost(r.Host)
	name := HostOnly(h)
	if name == "" {
		return false
	}
	if loopback.Host(name) {
		return true
	}
	if ip, err := netip.ParseAddr(name); err == nil {
		if la, ok := r.Context().Value(http.LocalAddrContextKey).(*net.TCPAddr); ok {
			if local, ok := netip.AddrFromSlice(la.IP); ok && local.Unmap() == ip.Unmap() {
				return true
			}
		}
	}
	return s.configured(h)
}

// configured reports whether host (normalised, with or without a port) is
// one of the configured names.
func (s *Guard) configured(host string) bool {
	for _, c := range s.Hosts {
		if c == host || c == HostOnly(host) {
			return true
		}
	}
	return false
}

// checkOrigin refuses a change that a browser sends from another site: one
// whose Origin is neither the controller's as the request reached it nor
// a configured name, or that the browser marks cross-site.
func (s *Guard) checkOrigin(r *http.Request) error {
	refuse := func(from string) error {
		return fmt.Errorf("a change from %s is refused: the API takes changes from programs (vlmfleet, curl), not from web pages of other sites", from)
	}
	if r.Header.Get("Sec-Fetch-Site") == "cross-site" {
		return refuse("another site")
	}
	origin := r.Header.Get("Origin")
	if origin == "" {
		return nil
	}
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return refuse(fmt.Sprintf("origin %q", origin))
	}
	if o := NormalHost(u.Host); o == NormalHost(r.Host) || s.configured(o) {
		return nil
	}
	return refuse("origin " + origin)
}

// checkJSONBody: a change with a body (or a Content-Type) must be JSON; one
// without either (a DELETE) passes.
func checkJSONBody(r *http.Request) error {
	ct := r.Header.Get("Content-Type")
	if ct == "" && r.ContentLength == 0 {
		return nil
	}
	if mt, _, err := mime.ParseMediaType(ct); err == nil && mt == "application/json" {
		return nil
	}
	if ct == "" {
		ct = "none"
	}
	return fmt.Errorf("Content-Type %s: the API takes application/json", ct)
}

// NormalHost lowercases a host[:port] and drops a trailing dot of the name.
func NormalHost(h string) string {
	h = strings.ToLower(strings.TrimSpace(h))
	if name, port, err := net.SplitHostPort(h); err == nil {
		name = strings.TrimSuffix(name, ".")
		if strings.Contains(name, ":") {
			return "[" + name + "]:" + port
		}
		return name + ":" + port
	}
	return strings.TrimSuffix(h, ".")
}

// HostOnly is the name or address of a host[:port], without brackets.
func HostOnly(h string) string {
	if name, _, err := net.SplitHostPort(h); err == nil {
		return name
	}
	return strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")
}

// Token is the API token; TokenFile the file it was read from or made
// in, empty when Options.APIToken gave it.
func (s *Guard) Token() string     { return s.token }
func (s *Guard) TokenFile() string { return s.tokenFile }

// JoinPath is the one change the API takes without its token: a device
// authenticates its join with a join token's secret.
const JoinPath = "/api/join"

// IsJoin says whether r is a device's join.
func IsJoin(r *http.Request) bool { return r.Method == http.MethodPost && r.URL.Path == JoinPath }
