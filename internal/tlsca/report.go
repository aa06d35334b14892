package tlsca

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
)

// ReportFailures returns a copy of cfg, a ClientConfig, that also hands
// each failed verification of a server's certificate to report. A client
// that reconnects by itself (nats.go) retries a handshake that fails in
// silence; with this, it can stop and say why, as at its first
// connection. The verification is the one cfg makes: against the pinned
// CA, the CA file, or the system's roots.
func ReportFailures(cfg *tls.Config, report func(error)) *tls.Config {
	out := cfg.Clone()
	verify := cfg.VerifyConnection
	if verify == nil {
		// Done here rather than by crypto/tls, whose own failures never
		// reach a callback.
		roots, name := cfg.RootCAs, cfg.ServerName
		out.InsecureSkipVerify = true
		verify = func(cs tls.ConnectionState) error { return verifyChain(cs, roots, name) }
	}
	out.VerifyConnection = func(cs tls.ConnectionState) error {
		err := verify(cs)
		if err != nil {
			report(err)
		}
		return err
	}
	return out
}

// verifyChain is crypto/tls's verification of a server's chain: against
// roots (the system's when nil), for name (the name dialled when empty).
func verifyChain(cs tls.ConnectionState, roots *x509.CertPool, name string) error {
	if len(cs.PeerCertificates) == 0 {
		return errors.New("tls: the server sent no certificate")
	}
	if name == "" {
		name = cs.ServerName
	}
	inter := x509.NewCertPool()
	for _, c := range cs.PeerCertificates[1:] {
		inter.AddCert(c)
	}
	_, err := cs.PeerCertificates[0].Verify(x509.VerifyOptions{Roots: roots, DNSName: name, Intermediates: inter})
	if err != nil {
		return fmt.Errorf("%w: %w", ErrUntrusted, err)
	}
	return nil
}
