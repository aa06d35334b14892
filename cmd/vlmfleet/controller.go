package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/rs/zerolog"

	"github.com/vlmfleet/vlmfleet/controller"
	"github.com/vlmfleet/vlmfleet/controller/api"
	"github.com/vlmfleet/vlmfleet/controller/client"
	"github.com/vlmfleet/vlmfleet/explorer"
	"github.com/vlmfleet/vlmfleet/explorer/web"
	"github.com/vlmfleet/vlmfleet/internal/atomicfile"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// explorerHandler makes the web explorer mounted at "/" of the controller.
func explorerHandler(log zerolog.Logger) func(controller.RunSource) http.Handler {
	return func(runs controller.RunSource) http.Handler { return explorer.NewHandler(runs, log, web.WithLab()) }
}

func cmdController(ctx context.Context, c *cli, args []string) error {
	if len(args) > 0 && args[0] == "backup" {
		return controllerBackup(ctx, c, args[1:])
	}
	fs := newFlagSet(c, "controller")
	dataDir := fs.String("data-dir", "./vlmfleet-data", "directory for the database (vlmfleet.db) and the embedded NATS store")
	httpAddr := fs.String("http", "127.0.0.1:8080", "address of the API, live page and explorer")
	natsURL := fs.String("nats-url", "", "external NATS server URL, or a comma-separated list of a cluster's nodes (default: embed one)")
	streamReplicas := fs.Int("stream-replicas", 1, fmt.Sprintf("copies of each stream a NATS cluster keeps, 1..%d (3 in a 3-node cluster); above 1 needs --nats-url", controller.MaxStreamReplicas))
	eventsMiB := fs.Int64("events-stream-mib", controller.DefaultEventsStreamMaxBytes>>20,
		fmt.Sprintf("MiB the events stream keeps at most (what agents report; at least %d); full, it refuses new messages, which agents keep and send again", controller.MinStreamMaxBytes>>20))
	jobsMiB := fs.Int64("jobs-stream-mib", controller.DefaultJobsStreamMaxBytes>>20,
		fmt.Sprintf("MiB the jobs stream keeps at most (jobs not yet taken by their agents; at least %d); full, new jobs wait to be published", controller.MinStreamMaxBytes>>20))
	natsListen := fs.String("nats-listen", "127.0.0.1:4222", "client address of the embedded NATS server (use 0.0.0.0:4222 to accept agents on other hosts)")
	publicRead := fs.Bool("public-read", false, "let anyone who reaches --http read results, pages and the API without the token (changes always need it)")
	var hosts []string
	fs.Func("http-host", "a `NAME` (or NAME:PORT) that browsers and clients use for this controller, besides loopback and the --http address; repeatable", func(s string) error {
		hosts = append(hosts, s)
		return nil
	})
	natsCreds := fs.String("nats-credentials", "", "with --nats-url: the controller's credentials there (an nkey seed or a .creds file)")
	natsCA := fs.String("nats-ca", "", "with a tls:// --nats-url: the `FILE` of the CA the server's certificate must be signed by")
	natsCAPin := fs.String("nats-ca-pin", "", "with a tls:// --nats-url: trust the CA whose fingerprint this is (sha256:..., as the server's CA prints it)")
	insecure := fs.Bool("insecure", false, "run the embedded NATS server without authentication: anyone who reaches it can forge or delete results (loopback only)")
	insecurePublic := fs.Bool("insecure-public", false, "allow --insecure on an address other hosts can reach")
	tlsMode := fs.String("tls", controller.TLSAuto, "TLS for NATS and HTTP: auto (on each listener off loopback), on or off; without --tls-cert, a CA of the controller's own in <data-dir>/tls")
	tlsCert := fs.String("tls-cert", "", "the listeners' TLS certificate `FILE` (PEM, the chain after it), instead of the controller's own CA")
	tlsKey := fs.String("tls-key", "", "the key `FILE` of --tls-cert (PEM)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Errorf("unexpected argument %q", fs.Arg(0))}
	}
	if *streamReplicas < 1 {
		// The controller's Options read 0 as "the default"; on the command
		// line it is a mistake.
		return usageError{fmt.Errorf("--stream-replicas %d: allowed 1..%d", *streamReplicas, controller.MaxStreamReplicas)}
	}
	for _, l := range []struct {
		flag string
		mib  int64
	}{{"events-stream-mib", *eventsMiB}, {"jobs-stream-mib", *jobsMiB}} {
		// The controller's Options read 0 as "the default"; on the command
		// line it is a mistake, as is a size past what an int64 of bytes holds.
		if l.mib < controller.MinStreamMaxBytes>>20 || l.mib > 1<<40 {
			return usageError{fmt.Errorf("--%s %d: allowed %d..%d (MiB)", l.flag, l.mib, controller.MinStreamMaxBytes>>20, int64(1)<<40)}
		}
	}
	ctl, err := controller.New(controller.Options{
		EventsStreamMaxBytes: *eventsMiB << 20, JobsStreamMaxBytes: *jobsMiB << 20,
		DataDir: *dataDir, NATSURL: *natsURL, StreamReplicas: *streamReplicas, NATSListen: *natsListen, HTTPAddr: *httpAddr, PublicRead: *publicRead, HTTPHosts: hosts,
		NATSCredentials: *natsCreds, NATSCA: *natsCA, NATSCAPin: *natsCAPin, Insecure: *insecure, InsecurePublic: *insecurePublic, TLS: *tlsMode, TLSCertFile: *tlsCert, TLSKeyFile: *tlsKey,
		Log: c.log, Version: c.version, Explorer: explorerHandler(c.log),
	})
	if err != nil {
		return err
	}
	if err := ctl.Start(ctx); err != nil {
		_ = ctl.Close()
		return err
	}
	c.log.Info().Str("explorer", ctl.HTTPURL()+"/").Str("live", ctl.HTTPURL()+"/live").
		Str("api", ctl.HTTPURL()+"/api/health").Str("api_token_file", ctl.APITokenFile()).Str("nats", protocol.RedactURL(ctl.NATSURL())).
		Str("nats_auth", ctl.NATSAuth()).Msg("controller ready; agents connect with: vlmfleet agent --config agent.yaml --nats-url " +
		protocol.RedactURL(ctl.NATSURL()) + map[bool]string{true: " --nats-credentials ID.nk (from: vlmfleet agent-creds create ID)"}[ctl.NATSAuth() == api.NATSAuthNkeys] +
		map[bool]string{true: " --nats-ca-pin " + ctl.TLSFingerprint()}[strings.HasPrefix(ctl.NATSURL(), "tls://")] +
		map[bool]string{true: "; or, simpler, make a join string (vlmfleet join-token create) and run on each device: vlmfleet agent --config agent.yaml --join STRING"}[ctl.NATSAuth() == api.NATSAuthNkeys && strings.HasPrefix(ctl.HTTPURL(), "https://")])
	<-ctx.Done()
	c.log.Info().Msg("shutting down")
	return ctl.Close()
}

// controllerBackup is `vlmfleet controller backup`: a consistent copy of
// the running controller's store, through its API.
func controllerBackup(ctx context.Context, c *cli, args []string) error {
	fs := newFlagSet(c, "controller backup")
	out := fs.String("out", "", "the `FILE` to write the copy of the store to (required; replaced if it exists)")
	ctl := fs.String("controller", "", "controller URL (default $"+client.EnvURL+", else "+client.DefaultURL+")")
	tokenFile := tokenFileFlag(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	switch {
	case fs.NArg() > 0:
		return usageError{fmt.Errorf("unexpected argument %q", fs.Arg(0))}
	case *out == "":
		return usageError{errors.New("--out FILE is required: where to write the copy of the store")}
	}
	cl, err := newClient(c, *ctl, *tokenFile)
	if err != nil {
		return err
	}
	n, err := atomicfile.Write(*out, 0o600, func(w io.Writer) error {
		_, err := cl.Backup(ctx, w)
		return err
	})
	if err != nil {
		return fmt.Errorf("controller backup --out %s: %w", *out, err)
	}
	fmt.Fprintf(c.stdout, "wrote a copy of the store of %s to %s (%d bytes)\n", cl.URL(), *out, n)
	return nil
}
