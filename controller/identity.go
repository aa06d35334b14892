package controller

import (
	"context"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/vlmfleet/vlmfleet/controller/api"
	"github.com/vlmfleet/vlmfleet/controller/identity"
)

// ControllerSeedFile is the file in the data dir that holds the nkey seed
// of the controller's own NATS user (identity.ControllerSeedFile).
const ControllerSeedFile = identity.ControllerSeedFile

// natsAuth says how clients sign in to the NATS server opt makes or names:
// NATSAuthNkeys, NATSAuthOff or NATSAuthExternal.
func natsAuth(opt Options) string {
	switch {
	case opt.NATSURL != "":
		return api.NATSAuthExternal
	case opt.Insecure:
		return api.NATSAuthOff
	}
	return api.NATSAuthNkeys
}

// newRegistry is the controller's room of NATS identities (package
// identity), handed the embedded server to reload and the jobs room to
// end a revoked agent's jobs.
func (c *Controller) newRegistry() *identity.Registry {
	opt := identity.Options{DataDir: c.opt.DataDir, NATSAuth: natsAuth(c.opt)}
	return identity.New(opt, c.store, c.tls, identity.Hooks{
		Reload: func(users []*server.NkeyUser) error {
			return c.ns.ReloadOptions(c.serverOptions(users))
		},
		Disconnect:     c.disconnect,
		EndRevokedJobs: c.jobs.EndRevokedAgentsJobs,
		Conflicts: func(err error) {
			if err != nil {
				c.problems.set(ProblemIdentities, err)
			} else {
				c.problems.clear(ProblemIdentities)
			}
		},
		NATSURL:  func() string { return c.natsURL },
		NATSHost: func() string { return c.natsHost },
		BeforeReload: func() {
			if hook := c.testHookAuthReload.Load(); hook != nil {
				(*hook)()
			}
		},
	}, c.log)
}

// NATSAuth says how clients sign in to the controller's NATS server:
// NATSAuthNkeys, NATSAuthOff or NATSAuthExternal.
func (c *Controller) NATSAuth() string { return c.identity.NATSAuth() }

// NATSSeedFile is the file holding the controller's own nkey seed
// (ControllerSeedFile in the data dir), empty unless NATSAuth is
// NATSAuthNkeys. Whoever reads it has every permission on the embedded
// server: tests that play the controller, an operator's nats CLI.
func (c *Controller) NATSSeedFile() string { return c.identity.NATSSeedFile() }

// EnrolAgent creates a new nkey for agent id, replacing any it had (whose
// connections are closed), lets the running server admit it with the
// agent's permissions, and returns its seed (identity.Registry.Enrol).
func (c *Controller) EnrolAgent(ctx context.Context, id string) (seed string, err error) {
	creds, err := c.identity.Enrol(ctx, id)
	return creds.Seed, err
}

// RevokeAgent removes agent id's NATS user from the running server and
// closes its connections (identity.Registry.Revoke). An agent without
// active credentials is ErrNotFound.
func (c *Controller) RevokeAgent(ctx context.Context, id string) error {
	_, err := c.identity.Revoke(ctx, id)
	return err
}

// disconnect closes every connection signed in with public key pub and
// returns how many it closed.
func (c *Controller) disconnect(pub string) int {
	cz, err := c.ns.Connz(&server.ConnzOptions{User: pub, Limit: 1 << 16})
	if err != nil {
		c.log.Warn().Err(err).Msg("listing NATS connections")
		return 0
	}
	n := 0
	for _, ci := range cz.Conns {
		if c.ns.DisconnectClientByID(ci.Cid) == nil {
			n++
		}
	}
	return n
}
