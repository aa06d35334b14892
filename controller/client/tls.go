package client

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"net/url"

	"github.com/vlmfleet/vlmfleet/internal/tlsca"
)

// How the CLI trusts a controller's TLS certificate made by its own CA
// (docs/security.md#tls): a copy of the CA file, or the CA's fingerprint
// as the controller logs it. With neither, the system's roots.
const (
	EnvCAFile = "VLMFLEET_CA_FILE"
	EnvCAPin  = "VLMFLEET_CA_PIN"
)

// HTTPSHint ends the message of the answer to a plain HTTP request that a
// controller serving TLS gives.
const HTTPSHint = "the controller serves https: use https:// in --controller or $" + EnvURL + ", and trust its CA with $" + EnvCAFile + " or $" + EnvCAPin

// WithTLS makes https connections with cfg.
func WithTLS(cfg *tls.Config) Option { return func(c *Client) { c.tlsConfig = cfg } }

// WithCA trusts the CA in caFile, or the CA whose fingerprint pin is
// ("sha256:<hex>", as the controller logs it and /api/health reports
// it); empty both, the system's roots. The certificate must name the
// base URL's host. New fails on a file without a certificate or a pin
// that is not one.
func WithCA(caFile, pin string) Option {
	return func(c *Client) { c.caFile, c.caPin = caFile, pin }
}

// TLSFromEnv is WithCA with the file getenv(EnvCAFile) names and the pin
// getenv(EnvCAPin).
func TLSFromEnv(getenv func(string) string) Option {
	if getenv == nil {
		return func(*Client) {}
	}
	return WithCA(getenv(EnvCAFile), getenv(EnvCAPin))
}

// setupTLS gives the client's transport the TLS configuration that
// WithTLS or WithCA asked for.
func (c *Client) setupTLS() error {
	if c.caFile != "" || c.caPin != "" {
		u, err := url.Parse(c.base)
		if err != nil {
			return err
		}
		cfg, err := tlsca.ClientConfig(c.caFile, c.caPin, u.Hostname())
		if err != nil {
			return fmt.Errorf("%s / %s: %w", EnvCAFile, EnvCAPin, err)
		}
		c.tlsConfig = cfg
	}
	if c.tlsConfig == nil {
		return nil
	}
	var tr *http.Transport
	switch t := c.hc.Transport.(type) {
	case nil:
		tr = http.DefaultTransport.(*http.Transport).Clone()
	case *http.Transport:
		tr = t.Clone()
	default:
		return errors.New("client: WithTLS and WithCA need an http.Client whose Transport is an *http.Transport")
	}
	tr.TLSClientConfig = c.tlsConfig
	hc := *c.hc
	hc.Transport = tr
	c.hc = &hc
	return nil
}

// untrustedHint adds to an error of a TLS connection whose certificate
// the client does not trust how to make it trust it.
func untrustedHint(err error) error {
	var cv *tls.CertificateVerificationError
	var ua x509.UnknownAuthorityError
	var he x509.HostnameError
	if errors.As(err, &cv) || errors.As(err, &ua) || errors.As(err, &he) || errors.Is(err, tlsca.ErrUntrusted) {
		return fmt.Errorf("%w (the controller's certificate is not trusted: set %s to a copy of its CA file, <data-dir>/tls/ca.pem, "+
			"or %s to the CA fingerprint it logs at start)", err, EnvCAFile, EnvCAPin)
	}
	return err
}
