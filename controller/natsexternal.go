package controller

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/nats-io/nats.go"

	"github.com/vlmfleet/vlmfleet/internal/backoff"
	"github.com/vlmfleet/vlmfleet/internal/tlsca"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// externalOptions are the options of the connection to an external NATS
// server: the controller's credentials there, and the CA its certificate
// must be signed by (a file, or a pin), checked for each node's own name.
func (c *Controller) externalOptions() ([]nats.Option, error) {
	var out []nats.Option
	if c.opt.NATSCredentials != "" {
		creds, err := externalCredentials(c.opt.NATSCredentials)
		if err != nil {
			return nil, err
		}
		out = append(out, creds)
	}
	if c.opt.NATSCA != "" || c.opt.NATSCAPin != "" {
		// No server name: nats.go checks each node of a cluster list
		// against its own host.
		cfg, err := tlsca.ClientConfig(c.opt.NATSCA, c.opt.NATSCAPin, "")
		if err != nil {
			return nil, fmt.Errorf("controller: --nats-ca / --nats-ca-pin: %w", err)
		}
		out = append(out, nats.Secure(cfg))
	}
	return out, nil
}

// connectExternal connects to the external server, waiting while no node
// of it takes connections yet: a lab's machines come back from a power
// cut in any order, and a controller that exited because its NATS server
// was a few seconds late would leave the lab down. What waiting cannot
// fix (credentials refused, a certificate not trusted) ends it at once.
func (c *Controller) connectExternal(ctx context.Context, url string, opts []nats.Option) (*nats.Conn, error) {
	wait, cancel := context.WithTimeout(ctx, startRetryFor)
	defer cancel()
	var nc *nats.Conn
	err := backoff.Default.Retry(wait, func(attempt int) error {
		var err error
		nc, err = nats.Connect(url, opts...)
		switch {
		case err == nil:
			return nil
		case tlsca.VerificationFailed(err):
			return backoff.Permanent(fmt.Errorf("the server's certificate is not trusted (--nats-ca, --nats-ca-pin): %w", err))
		case !errors.Is(err, nats.ErrNoServers):
			return backoff.Permanent(err)
		}
		c.log.Warn().Err(err).Int("attempt", attempt).Str("nats", protocol.RedactURL(url)).
			Msg("the NATS server does not take connections yet; waiting for it")
		return err
	})
	var stopped *backoff.StoppedError
	if errors.As(err, &stopped) && ctx.Err() == nil {
		return nil, fmt.Errorf("no node took a connection for %v: %w", startRetryFor, stopped.Last)
	}
	return nc, err
}

// externalCredentials is the option that signs the controller in to an
// external server with the file given as Options.NATSCredentials: an nkey
// seed, or a JWT credentials file (an operator-mode server's).
func externalCredentials(file string) (nats.Option, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("controller: --nats-credentials: %w", err)
	}
	if strings.Contains(string(data), "BEGIN NATS USER JWT") {
		return nats.UserCredentials(file), nil
	}
	opt, err := nats.NkeyOptionFromSeed(file)
	if err != nil {
		return nil, fmt.Errorf("controller: --nats-credentials %s: want an nkey seed (SU...) or a .creds file: %w", file, err)
	}
	return opt, nil
}
