// Package tlsca gives a controller TLS without an operator's PKI: a CA of
// its own, kept in its data directory, that signs the certificate its
// listeners present. Agents and the CLI trust it either from the CA file
// or by pinning its SHA-256 fingerprint, which the controller prints at
// start; with a certificate from the operator's own CA neither is needed.
package tlsca

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/vlmfleet/vlmfleet/internal/atomicfile"
	"github.com/vlmfleet/vlmfleet/internal/private"
)

// Files of a CA directory.
const (
	caCertFile     = "ca.pem"
	caKeyFile      = "ca-key.pem"
	serverCertFile = "server.pem"
	serverKeyFile  = "server-key.pem"
)

// Lifetimes: the CA outlives many server certificates, which are made
// anew whenever the names change or a quarter of their life is left.
const (
	caLifetime     = 10 * 365 * 24 * time.Hour
	serverLifetime = 2 * 365 * 24 * time.Hour
)

// ErrUntrusted matches (errors.Is) the error of a handshake with a server
// whose certificate the pinned CA did not sign, or does not name the
// server; an unpinned configuration fails with crypto/tls's own errors.
var ErrUntrusted = errors.New("tls: the server's certificate is not trusted")

// Authority is a controller's CA and the server certificate it signed.
type Authority struct {
	dir    string
	caCert *x509.Certificate
	caPEM  []byte
	server tls.Certificate
}

// Open loads the CA kept in dir, or makes one, and a server certificate
// for names (host names and IP addresses), made anew when it does not
// cover them all or is near its end. Keys are written readable by their
// owner only, in a directory made 0700; a key others may read is refused,
// with the chmod that fixes it, since it may have been read already and
// the operator should decide whether to replace it.
func Open(dir string, names []string, now time.Time) (*Authority, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("tls: %w", err)
	}
	for _, key := range []string{caKeyFile, serverKeyFile} {
		if err := checkKey(filepath.Join(dir, key)); err != nil {
			return nil, err
		}
	}
	caCert, caKey, caPEM, err := loadOrMakeCA(dir, now)
	if err != nil {
		return nil, err
	}
	a := &Authority{dir: dir, caCert: caCert, caPEM: caPEM}
	if cert, err := tls.LoadX509KeyPair(filepath.Join(dir, serverCertFile), filepath.Join(dir, serverKeyFile)); err == nil &&
		covers(cert.Leaf, caCert, names, now) {
		a.server = cert
		return a, nil
	}
	if a.server, err = makeServer(dir, caCert, caKey, names, now); err != nil {
		return nil, err
	}
	return a, nil
}

// checkKey refuses a key file that others may read; a missing one is
// made later.
func checkKey(path string) error {
	fi, err := os.Stat(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err == nil {
		err = private.File(path, fi)
	}
	if err != nil {
		return fmt.Errorf("tls: %w", err)
	}
	return nil
}

// Fingerprint is the CA's pin: "sha256:" and the hex of its DER's SHA-256.
func (a *Authority) Fingerprint() string { return Fingerprint(a.caCert.Raw) }

// CAFile is the path of the CA certificate, to copy to agents and CLIs.
func (a *Authority) CAFile() string { return filepath.Join(a.dir, caCertFile) }

// ServerConfig is the TLS configuration of the controller's listeners: the
// server certificate with the CA behind it, so a client that pins the CA
// finds it in the chain.
func (a *Authority) ServerConfig() *tls.Config {
	return &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{a.server}}
}

// Fingerprint is the pin of a DER certificate.
func Fingerprint(der []byte) string {
	sum := sha256.Sum256(der)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// ClientConfig is the TLS configuration of a client of the controller:
// with caFile, trust that CA; with pin, trust the CA whose fingerprint it
// is, as presented in the server's chain; with neither, the system's
// roots. serverName is checked against the certificate in every case.
func ClientConfig(caFile, pin, serverName string) (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: serverName}
	if caFile != "" {
		data, err := os.ReadFile(caFile)
		if err != nil {
			return nil, fmt.Errorf("tls: CA file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(data) {
			return nil, fmt.Errorf("tls: CA file %s: no PEM certificate in it", caFile)
		}
		cfg.RootCAs = pool
	}
	if pin == "" {
		return cfg, nil
	}
	want, err := normalizePin(pin)
	if err != nil {
		return nil, err
	}
	// The pinned CA replaces the roots: the usual verification is done
	// here, against it, once the server has shown its chain.
	cfg.InsecureSkipVerify = true
	cfg.VerifyConnection = func(cs tls.ConnectionState) error { return verifyPinned(cs, want, serverName) }
	return cfg, nil
}

func normalizePin(pin string) (string, error) {
	p := strings.ToLower(strings.TrimSpace(pin))
	p = strings.ReplaceAll(strings.TrimPrefix(p, "sha256:"), ":", "")
	if b, err := hex.DecodeString(p); err != nil || len(b) != sha256.Size {
		return "", fmt.Errorf("tls: CA fingerprint %q: want sha256: and 64 hex digits, as the controller prints it", pin)
	}
	return "sha256:" + p, nil
}

// verifyPinned finds the pinned CA in the chain the server sent and
// verifies the server's certificate against it alone.
func verifyPinned(cs tls.ConnectionState, pin, serverName string) error {
	if len(cs.PeerCertificates) == 0 {
		return errors.New("tls: the server sent no certificate")
	}
	i := slices.IndexFunc(cs.PeerCertificates, func(c *x509.Certificate) bool { return Fingerprint(c.Raw) == pin })
	if i < 0 {
		return fmt.Errorf("%w: it is not signed by the pinned CA %s", ErrUntrusted, pin)
	}
	roots := x509.NewCertPool()
	roots.AddCert(cs.PeerCertificates[i])
	name := serverName
	if name == "" {
		name = cs.ServerName
	}
	_, err := cs.PeerCertificates[0].Verify(x509.VerifyOptions{Roots: roots, DNSName: name})
	if err != nil {
		return fmt.Errorf("%w: %w", ErrUntrusted, err)
	}
	return nil
}

func loadOrMakeCA(dir string, now time.Time) (*x509.Certificate, *ecdsa.PrivateKey, []byte, error) {
	certPath, keyPath := filepath.Join(dir, caCertFile), filepath.Join(dir, caKeyFile)
	if pair, err := tls.LoadX509KeyPair(certPath, keyPath); err == nil {
		key, ok := pair.PrivateKey.(*ecdsa.PrivateKey)
		if !ok {
			return nil, nil, nil, fmt.Errorf("tls: %s: not an ECDSA key", keyPath)
		}
		caPEM, err := os.ReadFile(certPath)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("tls: %w", err)
		}
		return pair.Leaf, key, caPEM, nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, nil, nil, fmt.Errorf("tls: the CA in %s: %w", dir, err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("tls: CA key: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: "vlmfleet controller CA"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(caLifetime),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("tls: CA certificate: %w", err)
	}
	caPEM, err := writePair(certPath, keyPath, der, key)
	if err != nil {
		return nil, nil, nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("tls: CA certificate: %w", err)
	}
	return cert, key, caPEM, nil
}

func makeServer(dir string, ca *x509.Certificate, caKey *ecdsa.PrivateKey, names []string, now time.Time) (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("tls: server key: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: "vlmfleet controller"},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(serverLifetime),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	for _, n := range names {
		if ip := net.ParseIP(strings.Trim(n, "[]")); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else if n != "" {
			tmpl.DNSNames = append(tmpl.DNSNames, n)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("tls: server certificate: %w", err)
	}
	if _, err := writePair(filepath.Join(dir, serverCertFile), filepath.Join(dir, serverKeyFile), der, key, ca.Raw); err != nil {
		return tls.Certificate{}, err
	}
	return tls.LoadX509KeyPair(filepath.Join(dir, serverCertFile), filepath.Join(dir, serverKeyFile))
}

// covers reports whether cert was signed by ca, names every name and has
// more than a quarter of its life left.
func covers(cert, ca *x509.Certificate, names []string, now time.Time) bool {
	if cert == nil || cert.CheckSignatureFrom(ca) != nil || now.After(cert.NotAfter.Add(-serverLifetime/4)) {
		return false
	}
	for _, n := range names {
		if n != "" && cert.VerifyHostname(strings.Trim(n, "[]")) != nil {
			return false
		}
	}
	return true
}

// writePair writes a certificate (and the chain after it) and its key,
// each whole or not at all; the key is readable by its owner only. Both
// are written beside their file and renamed over it: rewriting the file
// itself would keep the mode (and follow a link) of what was there. It
// returns the certificate's PEM.
func writePair(certPath, keyPath string, der []byte, key *ecdsa.PrivateKey, chain ...[]byte) ([]byte, error) {
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("tls: %w", err)
	}
	if err := writeFile(keyPath, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		return nil, err
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	out := certPEM
	for _, c := range chain {
		out = append(out, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c})...)
	}
	if err := writeFile(certPath, out, 0o644); err != nil {
		return nil, err
	}
	return certPEM, nil
}

func writeFile(path string, data []byte, perm os.FileMode) error {
	_, err := atomicfile.Write(path, perm, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
	if err != nil {
		return fmt.Errorf("tls: %w", err)
	}
	return nil
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		panic(fmt.Sprintf("tls: crypto/rand failed: %v", err))
	}
	return n
}

// VerificationFailed says whether err is a TLS handshake failing on the
// server's certificate: not signed by the trusted or pinned CA, not
// naming the host, expired.
func VerificationFailed(err error) bool {
	var cv *tls.CertificateVerificationError
	var ua x509.UnknownAuthorityError
	var he x509.HostnameError
	var ci x509.CertificateInvalidError
	return errors.As(err, &cv) || errors.As(err, &ua) || errors.As(err, &he) || errors.As(err, &ci) || errors.Is(err, ErrUntrusted)
}
