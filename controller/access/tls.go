package access

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

// TLS is what the controller serves TLS with.
type TLS struct {
	// NATS and HTTP say which listeners have TLS.
	NATS, HTTP bool
	// NATSConfig and HTTPConfig are the listeners' configurations; the
	// embedded server is given the same NATSConfig at every reload, so
	// that it sees no change.
	NATSConfig, HTTPConfig *tls.Config
	// OwnCAFingerprint is the pin of the controller's own CA, empty with
	// the operator's certificate (whose pin is its chain's last
	// certificate's, read from operator: Fingerprint).
	OwnCAFingerprint string
	// caFile is the controller's own CA file; empty with an operator's
	// certificate.
	caFile string
	// operator serves the operator's certificate, renewed on disk; nil
	// with the controller's own.
	operator *certReloader
}

// On says whether any listener has TLS.
func (s *TLS) On() bool { return s.NATS || s.HTTP }

// CheckTLSOptions refuses TLS options that make no sense.
func CheckTLSOptions(opt Options) error {
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

// SetupTLS decides which listeners have TLS and loads the operator's
// certificate, or makes (or loads) the controller's own CA under
// <DataDir>/tls with a certificate for every name the controller may be
// reached by.
func SetupTLS(opt Options, log zerolog.Logger) (*TLS, error) {
	want := func(addr string) bool {
		switch opt.TLS {
		case TLSOn:
			return true
		case TLSAuto:
			return opt.TLSCertFile != "" || !loopback.Addr(addr)
		}
		return false
	}
	st := &TLS{NATS: opt.NATSURL == "" && want(opt.NATSListen), HTTP: want(opt.HTTPAddr)}
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
	if !st.On() {
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
		if err := PrivateDir(dir, func(string) bool { return true }, log); err != nil {
			return nil, fmt.Errorf("controller: tls: %w", err)
		}
		ca, err := tlsca.Open(dir, certNames(opt), time.Now())
		if err != nil {
			return nil, fmt.Errorf("controller: %w", err)
		}
		base.Certificates = ca.ServerConfig().Certificates[:1]
		st.OwnCAFingerprint, st.caFile = ca.Fingerprint(), ca.CAFile()
	}
	if st.NATS {
		st.NATSConfig = base.Clone()
	}
	if st.HTTP {
		st.HTTPConfig = base.Clone()
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
		names = append(names, HostOnly(NormalHost(h)))
	}
	names = slices.DeleteFunc(names, func(n string) bool { return !CertName(n) })
	slices.Sort(names)
	return slices.Compact(names)
}

// CertName says whether n can be a name in a certificate: an address, or
// a DNS name of letters, digits, '-', '_' and '.'.
func CertName(n string) bool {
	if n == "" || net.ParseIP(n) != nil {
		return n != ""
	}
	return !strings.ContainsFunc(n, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.')
	})
}

// ConnectableURL turns the embedded server's URL for a listener on every
// address (0.0.0.0:4222) into one that a client on this host can connect
// to and whose host the certificate names (127.0.0.1:4222).
func ConnectableURL(u string) string {
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

// LogStart says at start which listeners have TLS and how agents and the
// CLI trust them; certFile is the operator's certificate, if any.
func (st *TLS) LogStart(log zerolog.Logger, certFile string) {
	if !st.On() {
		return
	}
	ev := log.Info().Bool("nats_tls", st.NATS).Bool("http_tls", st.HTTP).Str("ca_fingerprint", st.OwnCAFingerprint)
	if st.caFile == "" {
		ev.Str("cert", certFile).Msg("TLS with the operator's certificate: agents and the CLI trust its CA " +
			"(agents: --nats-ca FILE, the CLI: $VLMFLEET_CA_FILE), or pin ca_fingerprint (--nats-ca-pin, $VLMFLEET_CA_PIN)")
		return
	}
	ev.Str("ca_file", st.caFile).Msgf("TLS with the controller's own CA: agents trust it with --nats-ca-pin %s "+
		"(or a copy of ca_file and --nats-ca FILE); the CLI with VLMFLEET_CA_PIN=%s (or VLMFLEET_CA_FILE=FILE)", st.OwnCAFingerprint, st.OwnCAFingerprint)
}

// Fingerprint is the pin of the CA behind the controller's TLS
// certificate ("sha256:<hex>"), for agents' --nats-ca-pin and the CLI's
// VLMFLEET_CA_PIN; empty when no listener has TLS.
func (s *TLS) Fingerprint() string {
	if !s.On() {
		return ""
	}
	if s.operator != nil {
		return s.operator.fingerprint()
	}
	return s.OwnCAFingerprint
}

// CAFile is the controller's own CA certificate (<DataDir>/tls/ca.pem), to
// copy to agents and CLIs; empty when no listener has TLS or the
// operator gave the certificate.
func (s *TLS) CAFile() string {
	if !s.On() {
		return ""
	}
	return s.caFile
}

// HTTPErrorLog takes net/http's own messages (failed TLS handshakes:
// scanners, clients that do not trust the certificate) to the debug log.
func HTTPErrorLog(zl zerolog.Logger) *log.Logger {
	l := zl.With().Str("component", "http").Logger()
	return log.New(debugWriter{l}, "", 0)
}

type debugWriter struct{ log zerolog.Logger }

func (w debugWriter) Write(p []byte) (int, error) {
	w.log.Debug().Msg(strings.TrimSpace(string(p)))
	return len(p), nil
}
