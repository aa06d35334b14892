// Package identity is the controller's room of NATS identities: its own
// key, the users the embedded server admits (each enrolled agent confined
// to its own subjects, one per public key), enrolment by agent-creds or
// by a device's join, revocation, and the join tokens joins are made
// with. The controller hands it the store, its TLS and, as hooks, what
// only the controller can do: reload the running server's users, close a
// key's connections, end a revoked agent's jobs.
package identity

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nkeys"
	"github.com/rs/zerolog"

	"github.com/vlmfleet/vlmfleet/controller/access"
	"github.com/vlmfleet/vlmfleet/controller/store"
)

// Options are what the room reads of the controller's options.
type Options struct {
	// DataDir holds ControllerSeedFile.
	DataDir string
	// NATSAuth is how clients sign in to the controller's NATS server:
	// api.NATSAuthNkeys, NATSAuthOff or NATSAuthExternal.
	NATSAuth string
}

// Store is what the room keeps in the controller's store: the agents'
// identities and the join tokens.
type Store interface {
	Identity(id string) (store.Identity, error)
	Identities(ctx context.Context) ([]store.Identity, error)
	PutIdentity(id, publicKey string, at time.Time) (store.Identity, error)
	RevokeIdentity(id string, at time.Time) (store.Identity, error)
	Join(e store.Enrolment, decide store.JoinDecision) (store.Identity, error)
	PutJoinToken(t store.JoinToken) error
	JoinTokens(ctx context.Context) ([]store.JoinToken, error)
	RevokeJoinToken(id string, at time.Time) (store.JoinToken, error)
}

// Hooks are what the room needs of the controller.
type Hooks struct {
	// Reload gives the running embedded server users as its users; the
	// server closes the connections of users it no longer has.
	Reload func(users []*server.NkeyUser) error
	// Disconnect closes every connection signed in with public key pub
	// and returns how many it closed. The reload has closed those it saw;
	// this catches one that signed in while the reload was under way.
	Disconnect func(pub string) int
	// EndRevokedJobs ends the jobs still queued for a revoked agent and
	// returns how many it ended.
	EndRevokedJobs func(ctx context.Context, agentID string, at time.Time) (int, error)
	// Conflicts reports the identities in conflict as a health problem;
	// nil when none are.
	Conflicts func(err error)
	// NATSURL is the URL agents connect to; NATSHost the embedded
	// server's listen host.
	NATSURL, NATSHost func() string
	// BeforeReload, when set, runs before each reload takes its batch.
	BeforeReload func()
}

// Registry keeps the controller's NATS identities. Create it with New;
// StartEmbedded loads the controller's key as the embedded server starts.
type Registry struct {
	opt   Options
	log   zerolog.Logger
	store Store
	tls   *access.TLS
	hooks Hooks
	// authMu serialises changes of the embedded server's users; ctlKey
	// is the controller's own nkey (NATSAuthNkeys only); embedded says
	// whether the server runs, to change its users.
	authMu   sync.Mutex
	ctlKey   nkeys.KeyPair
	embedded bool
	// authReloads batches the reloads that enrolments and revocations ask.
	authReloads authReloads
}

// New is the room of identities for a controller whose options are opt.
func New(opt Options, st Store, tls *access.TLS, hooks Hooks, log zerolog.Logger) *Registry {
	return &Registry{opt: opt, log: log, store: st, tls: tls, hooks: hooks}
}

// StartEmbedded loads the controller's own key (creating it at the first
// start) when the server authenticates, and calls start with the users
// the store holds (none without a key) to start the embedded server. Once
// start returns nil, enrolments change the running server's users.
func (reg *Registry) StartEmbedded(ctx context.Context, start func(users []*server.NkeyUser) error) error {
	reg.authMu.Lock()
	defer reg.authMu.Unlock()
	var err error
	if seed := reg.NATSSeedFile(); seed != "" {
		if reg.ctlKey, err = reg.loadOrCreateSeed(seed); err != nil {
			return err
		}
	}
	var users []*server.NkeyUser
	if reg.ctlKey != nil {
		if users, err = reg.nkeyUsers(ctx); err != nil {
			return fmt.Errorf("controller: embedded nats: %w", err)
		}
	}
	if err := start(users); err != nil {
		return err
	}
	reg.embedded = true
	return nil
}

// ControllerKey is the controller's own nkey, which signs its connection
// to the embedded server; nil unless NATSAuth is NATSAuthNkeys and the
// server has started.
func (reg *Registry) ControllerKey() nkeys.KeyPair { return reg.ctlKey }

// ReloadCounts are how many reloads of the server's users were made, and
// how many calls asked for one.
func (reg *Registry) ReloadCounts() (made, asked int64) {
	return reg.authReloads.count.Load(), reg.authReloads.asked.Load()
}
