package controller

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/vlmfleet/vlmfleet/controller/api"
	"github.com/vlmfleet/vlmfleet/internal/loopback"
	"github.com/vlmfleet/vlmfleet/internal/tlsca"
)

// TLS modes (Options.TLS).
const (
	// TLSAuto, the default: TLS on each listener that other hosts can
	// reach (the embedded NATS server's, the HTTP API's), and on every
	// listener when the operator gave a certificate; a listener on
	// loopback stays plain otherwise.
	TLSAuto = "auto"
	// TLSOn: TLS on every listener, loopback too.
	TLSOn = "on"
	// TLSOff: no TLS; a listener off loopback is warned about loudly.
	TLSOff = "off"
)

// TLSDirName is the directory in the data dir that holds the controller's
// own CA (ca.pem, ca-key.pem) and the server certificate it signed, made
// when TLS is on and the operator gave no certificate.
const TLSDirName = "tls"

// tlsState is what the controller serves TLS with.
type tlsState struct {
	// nats and http say which listeners have TLS.
	nats, http bool
	// natsConfig and httpConfig are the listeners' configurations; the
	// embedded server is given the same natsConfig at every reload, so
	// that it sees no change.
	natsConfig, httpConfig *tls.Config
	// fingerprint is the pin of the controller's own CA (the operator's
	// is its chain's last certificate, read from operator).
	fingerprint string
	// caFile is the controller's own CA file; empty with an operator's
	// certificate.
	caFile string
	// operator serves the operator's certificate, renewed on disk; nil
	// with the controller's own.
	operator *certReloader
}

// on says whether any listener has TLS.
func (s *tlsState) on() bool { return s.nats || s.http }

// checkTLSOptions refuses TLS options that make no sense.
func checkTLSOptions(opt Options) error {
	switch {
	case !slices.Contains([]string{TLSAuto, TLSOn, TLSOff}, opt.TLS):
		return fmt.Errorf("controller: --tls %q: want %s, %s or %s", opt.TLS, TLSAuto, TLSOn, TLSOff)
	case (opt.TLSCertFile == "") != (opt.TLSKeyFile == ""):
		return errors.New("controller: --tls-cert and --tls-key go together")
	case opt.TLS == TLSOff && opt.TLSCertFile != "":
		return errors.New("controller: --tls off and a certificate (--tls-cert) exclude each other")
	}
	return nil
}

// setupTLS decides which listeners have TLS and loads the operator's
// certificate, or makes (or loads) the controller's own CA under
// <DataDir>/tls with a certificate for every name the controller may be
// reached by.
func setupTLS(opt Options, log zerolog.Logger) (*tlsState, error) {
	want := func(addr string) bool {
		switch opt.TLS {
		case TLSOn:
			return true
		case TLSAuto:
			return opt.TLSCertFile != "" || !loopback.Addr(addr)
		}
		return false
	}
	st := &tlsState{nats: opt.NATSURL == "" && want(opt.NATSListen), http: want(opt.HTTPAddr)}
	if opt.TLS == TLSOff {
		warn := func(what, addr string) {
			log.Warn().Str("listen", addr).Msgf("INSECURE: TLS is off (--tls off) and %s accepts other hosts: "+
				"whoever can watch the network reads the API token, agent traffic and results in clear", what)
		}
		if opt.NATSURL == "" && !loopback.Addr(opt.NATSListen) {
			warn("NATS (--nats-listen)", opt.NATSListen)
		}
		if !loopback.Addr(opt.HTTPAddr) {
			warn("HTTP (--http)", opt.HTTPAddr)
		}
	}
	if !st.on() {
		return st, nil
	}
	base := &tls.Config{MinVersion: tls.VersionTLS12}
	if opt.TLSCertFile != "" {
		r, err := newCertReloader(opt.TLSCertFile, opt.TLSKeyFile, log)
		if err != nil {
			return nil, err
		}
		base.GetCertificate, st.operator = r.getCertificate, r
	} else {
		dir := filepath.Join(opt.DataDir, TLSDirName)
		// tls/ in the data directory is the controller's own.
		if err := privateDir(dir, func(string) bool { return true }, log); err != nil {
			return nil, fmt.Errorf("controller: tls: %w", err)
		}
		ca, err := tlsca.Open(dir, certNames(opt), time.Now())
		if err != nil {
			return nil, fmt.Errorf("controller: %w", err)
		}
		base.Certificates = ca.ServerConfig().Certificates[:1]
		st.fingerprint, st.caFile = ca.Fingerprint(), ca.CAFile()
	}
	if st.nats {
		st.natsConfig = base.Clone()
	}
	if st.http {
		st.httpConfig = base.Clone()
	}
	return st, nil
}

// certNames are the names the controller's own certificate is made for:
// loopback, the host's name, the listeners' addresses (every interface
// address for one that listens on all of them) and the HTTP host names.
func certNames(opt Options) []string {
	names := []string{"localhost", "127.0.0.1", "::1"}
	if h, err := os.Hostname(); err == nil {
		names = append(names, h)
	}
	for _, addr := range []string{opt.NATSListen, opt.HTTPAddr} {
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			continue
		}
		if ip := net.ParseIP(host); host != "" && (ip == nil || !ip.IsUnspecified()) {
			names = append(names, host)
			continue
		}
		addrs, _ := net.InterfaceAddrs()
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok && !n.IP.IsLinkLocalUnicast() {
				names = append(names, n.IP.String())
			}
		}
	}
	for _, h := range opt.HTTPHosts {
		names = append(names, hostOnly(normalHost(h)))
	}
	names = slices.DeleteFunc(names, func(n string) bool { return !certName(n) })
	slices.Sort(names)
	return slices.Compact(names)
}

// certName says whether n can be a name in a certificate: an address, or
// a DNS name of letters, digits, '-', '_' and '.'.
func certName(n string) bool {
	if n == "" || net.ParseIP(n) != nil {
		return n != ""
	}
	return !strings.ContainsFunc(n, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.')
	})
}

// connectableURL turns the embedded server's URL for a listener on every
// address (0.0.0.0:4222) into one that a client on this host can connect
// to and whose host the certificate names (127.0.0.1:4222).
func connectableURL(u string) string {
	scheme, hostPort, ok := strings.Cut(u, "://")
	host, port, err := net.SplitHostPort(hostPort)
	if !ok || err != nil {
		return u
	}
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		return scheme + "://" + net.JoinHostPort("127.0.0.1", port)
	}
	return u
}

// logTLS says at start which listeners have TLS and how agents and the
// CLI trust them.
func (c *Controller) logTLS() {
	st := c.tls
	if !st.on() {
		return
	}
	ev := c.log.Info().Bool("nats_tls", st.nats).Bool("http_tls", st.http).Str("ca_fingerprint", st.fingerprint)
	if st.caFile == "" {
		ev.Str("cert", c.opt.TLSCertFile).Msg("TLS with the operator's certificate: agents and the CLI trust its CA " +
			"(agents: --nats-ca FILE, the CLI: $VLMFLEET_CA_FILE), or pin ca_fingerprint (--nats-ca-pin, $VLMFLEET_CA_PIN)")
		return
	}
	ev.Str("ca_file", st.caFile).Msgf("TLS with the controller's own CA: agents trust it with --nats-ca-pin %s "+
		"(or a copy of ca_file and --nats-ca FILE); the CLI with VLMFLEET_CA_PIN=%s (or VLMFLEET_CA_FILE=FILE)", st.fingerprint, st.fingerprint)
}

// TLSFingerprint is the pin of the CA behind the controller's TLS
// certificate ("sha256:<hex>"), for agents' --nats-ca-pin and the CLI's
// VLMFLEET_CA_PIN; empty when no listener has TLS.
func (c *Controller) TLSFingerprint() string {
	if !c.tls.on() {
		return ""
	}
	if c.tls.operator != nil {
		return c.tls.operator.fingerprint()
	}
	return c.tls.fingerprint
}

// CAFile is the controller's own CA certificate (<DataDir>/tls/ca.pem), to
// copy to agents and CLIs; empty when no listener has TLS or the
// operator gave the certificate.
func (c *Controller) CAFile() string {
	if !c.tls.on() {
		return ""
	}
	return c.tls.caFile
}

func (c *Controller) tlsHealth() api.TLSHealth {
	return api.TLSHealth{HTTP: c.tls.http, NATS: c.tls.nats, CAFingerprint: c.TLSFingerprint()}
}

// httpErrorLog takes net/http's own messages (failed TLS handshakes:
// scanners, clients that do not trust the certificate) to the debug log.
func (c *Controller) httpErrorLog() *log.Logger {
	l := c.log.With().Str("component", "http").Logger()
	return log.New(debugWriter{l}, "", 0)
}

type debugWriter struct{ log zerolog.Logger }

func (w debugWriter) Write(p []byte) (int, error) {
	w.log.Debug().Msg(strings.TrimSpace(string(p)))
	return len(p), nil
}
