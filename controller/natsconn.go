package controller

import (
	"context"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/vlmfleet/vlmfleet/controller/access"
	"github.com/vlmfleet/vlmfleet/internal/loopback"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// startNATS embeds a JetStream server under the data dir, or connects to
// the external one, and opens the controller's connection.
func (c *Controller) startNATS(ctx context.Context) error {
	url := c.opt.NATSURL
	connURL := url
	var connOpts []nats.Option
	if url == "" {
		ns, err := c.embedNATS(ctx)
		if err != nil {
			return err
		}
		// The in-process connection needs no TLS: the server lets it
		// choose, and it chooses by the URL's scheme.
		url = access.ConnectableURL(ns.ClientURL())
		connURL = strings.Replace(url, "tls://", "nats://", 1)
		connOpts = append(connOpts, nats.InProcessServer(ns))
		if key := c.identity.ControllerKey(); key != nil {
			pub, err := key.PublicKey()
			if err != nil {
				return fmt.Errorf("controller: %w", err)
			}
			connOpts = append(connOpts, nats.Nkey(pub, key.Sign))
		}
	} else {
		ext, err := c.externalOptions()
		if err != nil {
			return err
		}
		connOpts = append(connOpts, ext...)
	}
	c.natsURL = url
	c.ncClosed = make(chan struct{})
	closed := c.ncClosed
	log := c.log
	connOpts = append(connOpts,
		nats.Name("vlmfleet-controller"),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(time.Second),
		nats.ClosedHandler(func(*nats.Conn) { close(closed) }),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			if err != nil {
				log.Warn().Err(err).Msg("nats disconnected")
			}
		}),
		nats.ReconnectHandler(func(nc *nats.Conn) { log.Info().Str("url", nc.ConnectedUrl()).Msg("nats reconnected") }),
		nats.ErrorHandler(func(_ *nats.Conn, sub *nats.Subscription, err error) {
			ev := log.Warn().Err(err)
			if sub != nil {
				ev = ev.Str("subject", sub.Subject)
			}
			ev.Msg("nats error")
		}),
	)
	var nc *nats.Conn
	var err error
	if c.opt.NATSURL == "" {
		nc, err = nats.Connect(connURL, connOpts...)
	} else {
		nc, err = c.connectExternal(ctx, connURL, connOpts)
	}
	if err != nil {
		return fmt.Errorf("controller: connect to nats %s: %w", protocol.RedactURL(url), err)
	}
	c.nc = nc
	js, err := jetstream.New(nc)
	if err != nil {
		return fmt.Errorf("controller: jetstream: %w", err)
	}
	c.js = js
	c.streams.Connect(js)
	c.jobs.Connect(nc, js)
	return nil
}

// checkNATSOptions refuses the combinations of NATS options that make no
// sense, and an open server that other hosts can reach unless asked for
// twice.
func checkNATSOptions(opt Options) error {
	switch {
	case opt.NATSCredentials != "" && opt.NATSURL == "":
		return fmt.Errorf("controller: NATS credentials are for an external server (--nats-url); the embedded server's controller key is %s in the data dir", ControllerSeedFile)
	case (opt.NATSCA != "" || opt.NATSCAPin != "") && opt.NATSURL == "":
		return errors.New("controller: --nats-ca and --nats-ca-pin are for an external server (--nats-url); the embedded server's TLS is the controller's own (--tls)")
	case opt.Insecure && opt.NATSURL != "":
		return errors.New("controller: --insecure is for the embedded NATS server; an external server's authentication is its own")
	case opt.StreamReplicas < 1 || opt.StreamReplicas > MaxStreamReplicas:
		return fmt.Errorf("controller: --stream-replicas %d: allowed 1..%d (NATS keeps at most %d copies of a stream)", opt.StreamReplicas, MaxStreamReplicas, MaxStreamReplicas)
	case opt.StreamReplicas > 1 && opt.NATSURL == "":
		return fmt.Errorf("controller: --stream-replicas %d needs a NATS cluster of at least %d nodes (--nats-url); the embedded server is one node and keeps one copy", opt.StreamReplicas, opt.StreamReplicas)
	case opt.InsecurePublic && !opt.Insecure:
		return errors.New("controller: --insecure-public goes with --insecure")
	case opt.Insecure && !opt.InsecurePublic && !loopback.Addr(opt.NATSListen):
		return fmt.Errorf("controller: --insecure on %s would let anyone who reaches it forge, take or delete jobs and results; "+
			"listen on 127.0.0.1, enrol agents instead (vlmfleet agent-creds create ID), or add --insecure-public if this network is yours alone", opt.NATSListen)
	}
	return nil
}

// embedNATS starts the embedded server with the users the identity room
// hands it (none when insecure) and sets c.ns.
func (c *Controller) embedNATS(ctx context.Context) (*server.Server, error) {
	host, portStr, err := net.SplitHostPort(c.opt.NATSListen)
	if err != nil {
		return nil, fmt.Errorf("controller: nats listen address %q: want host:port: %w", c.opt.NATSListen, err)
	}
	port, err := strconv.Atoi(portStr)
	if err != nil || port < -1 || port > 65535 {
		return nil, fmt.Errorf("controller: nats listen address %q: port must be 0..65535 or -1", c.opt.NATSListen)
	}
	if port == 0 {
		port = server.RANDOM_PORT // nats-server reads 0 as its default 4222
	}
	c.natsHost, c.natsPort = host, port
	err = c.identity.StartEmbedded(ctx, func(users []*server.NkeyUser) error {
		ns, err := server.NewServer(c.serverOptions(users))
		if err != nil {
			return fmt.Errorf("controller: embedded nats: %w", err)
		}
		ns.SetLogger(natsLogger{c.log.With().Str("component", "nats").Logger()}, false, false)
		ns.Start()
		if !ns.ReadyForConnections(15 * time.Second) {
			ns.Shutdown()
			return fmt.Errorf("controller: embedded nats did not start listening on %s within 15 s (is the port in use?)", c.opt.NATSListen)
		}
		c.ns = ns
		return nil
	})
	if err != nil {
		return nil, err
	}
	return c.ns, nil
}

// serverOptions are the embedded server's options, made anew for each
// start or reload (the server keeps what it is given), with users, those
// the store holds now (none when insecure).
func (c *Controller) serverOptions(users []*server.NkeyUser) *server.Options {
	opts := &server.Options{
		ServerName: "vlmfleet-controller",
		Host:       c.natsHost,
		Port:       c.natsPort,
		JetStream:  true,
		StoreDir:   filepath.Join(c.opt.DataDir, "nats"),
		NoSigs:     true,
		// Results carry per-request records; allow what the protocol allows.
		MaxPayload:        protocol.MaxMessageBytes,
		JetStreamMaxStore: c.streams.JetStreamMaxStore(),
	}
	if c.tls.NATS {
		opts.TLS, opts.TLSConfig, opts.TLSTimeout = true, c.tls.NATSConfig, 5
	}
	opts.Nkeys = users
	return opts
}

// natsLogger sends the embedded server's log to zerolog; its start-up
// banner is debug-level noise for a vlmfleet user.
type natsLogger struct{ log zerolog.Logger }

func (l natsLogger) Noticef(format string, v ...any) { l.log.Debug().Msgf(format, v...) }
func (l natsLogger) Warnf(format string, v ...any)   { l.log.Warn().Msgf(format, v...) }
func (l natsLogger) Fatalf(format string, v ...any)  { l.log.Error().Msgf(format, v...) }
func (l natsLogger) Errorf(format string, v ...any)  { l.log.Error().Msgf(format, v...) }
func (l natsLogger) Debugf(format string, v ...any)  { l.log.Trace().Msgf(format, v...) }
func (l natsLogger) Tracef(format string, v ...any)  { l.log.Trace().Msgf(format, v...) }
