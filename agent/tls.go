package agent

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/nats-io/nats.go"

	"github.com/vlmfleet/vlmfleet/internal/tlsca"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// natsTLS is the TLS configuration of the connection, trusting the CA in
// nats_ca or the CA whose fingerprint nats_ca_pin is, for the host the
// NATS URL names; nil with neither (a tls:// URL, or a server that asks
// for TLS, is then checked against the system's roots).
func (c Config) natsTLS() (*tls.Config, error) {
	if c.NATSCA == "" && c.NATSCAPin == "" {
		return nil, nil
	}
	cfg, err := tlsca.ClientConfig(c.NATSCA, c.NATSCAPin, natsServerName(c.NATSURL))
	if err != nil {
		return nil, fmt.Errorf("nats_ca / nats_ca_pin: %w", err)
	}
	return cfg, nil
}

// natsServerName is the host of the (first) server in a NATS URL, which
// the server's certificate must name.
func natsServerName(natsURL string) string {
	first, _, _ := strings.Cut(natsURL, ",")
	first = strings.TrimSpace(first)
	if !strings.Contains(first, "://") {
		first = "nats://" + first
	}
	u, err := url.Parse(first)
	if err != nil {
		return ""
	}
	return u.Hostname()
}

// UntrustedError says that the agent does not trust the NATS server's
// TLS certificate, or that it wants TLS and the server offers none. The
// agent stops: trying again cannot succeed.
type UntrustedError struct {
	AgentID string
	URL     string
	// CAFile and Pin are what the agent trusts ("" when not given).
	CAFile, Pin string
	Err         error
}

func (e *UntrustedError) Error() string {
	url := protocol.RedactURL(e.URL)
	if errors.Is(e.Err, nats.ErrSecureConnWanted) {
		return fmt.Sprintf("NATS at %s offers no TLS, but agent %s was given a CA (--nats-ca or --nats-ca-pin): "+
			"is this the controller you meant? If its NATS is meant to be plain (on loopback, or --tls off), drop those flags", url, e.AgentID)
	}
	var given string
	switch {
	case e.Pin != "":
		given = " (it is not the pinned CA " + e.Pin + ", or does not name the host in the URL: the controller's CA changed, or this is not your controller)"
	case e.CAFile != "":
		given = " (it is not signed by the CA in " + e.CAFile + ", or does not name the host in the URL)"
	}
	return fmt.Sprintf("NATS at %s: the controller's certificate is not trusted%s: copy its CA file (ca.pem) and pass --nats-ca, "+
		"or pin it with --nats-ca-pin sha256:... as the controller logs it (%v)", url, given, e.Err)
}

func (e *UntrustedError) Unwrap() error { return e.Err }

// untrusted says whether err is the TLS handshake failing on the server's
// certificate, or the server offering no TLS to an agent that wants it.
func untrusted(err error) bool {
	return tlsca.VerificationFailed(err) || errors.Is(err, nats.ErrSecureConnWanted)
}
