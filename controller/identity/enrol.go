package identity

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nkeys"

	"github.com/vlmfleet/vlmfleet/controller/api"
	"github.com/vlmfleet/vlmfleet/controller/store"
	"github.com/vlmfleet/vlmfleet/internal/atomicfile"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// ControllerSeedFile is the file in the data dir that holds the nkey seed
// of the controller's own NATS user, the one privileged identity of the
// embedded server. It is created, readable by its owner only, on the
// first start.
const ControllerSeedFile = "nats-controller.nk"

// NoNATSAuthorityError says that the controller does not issue agent
// credentials: its NATS server is external, or runs without
// authentication. HTTP 409.
type NoNATSAuthorityError struct{ Auth string }

func (e *NoNATSAuthorityError) Error() string {
	if e.Auth == api.NATSAuthExternal {
		return "the controller uses an external NATS server (--nats-url): its operator gives each agent a user " +
			"and the permissions protocol.AgentPermissionSubjects lists (see deploy/nats-server.conf and docs/security.md)"
	}
	return "the controller's NATS server runs without authentication (--insecure): agents connect without credentials; " +
		"start the controller without --insecure to enrol agents"
}

// NATSAuth says how clients sign in to the controller's NATS server:
// NATSAuthNkeys, NATSAuthOff or NATSAuthExternal.
func (reg *Registry) NATSAuth() string { return reg.opt.NATSAuth }

// NATSSeedFile is the file holding the controller's own nkey seed
// (ControllerSeedFile in the data dir), empty unless NATSAuth is
// NATSAuthNkeys. Whoever reads it has every permission on the embedded
// server: tests that play the controller, an operator's nats CLI.
func (reg *Registry) NATSSeedFile() string {
	if reg.NATSAuth() != api.NATSAuthNkeys {
		return ""
	}
	return filepath.Join(reg.opt.DataDir, ControllerSeedFile)
}

// BadAgentIDError says that an id cannot be an agent's. HTTP 400.
type BadAgentIDError struct{ Err error }

func (e *BadAgentIDError) Error() string { return e.Err.Error() }
func (e *BadAgentIDError) Unwrap() error { return e.Err }

// Enrol creates a new nkey for agent id, replacing any it had (whose
// connections are closed), lets the running server admit it with the
// agent's permissions, and returns its credentials. The controller keeps only
// the public key. A controller whose NATS server is external or insecure
// answers a *NoNATSAuthorityError.
func (reg *Registry) Enrol(ctx context.Context, id string) (api.AgentCredentials, error) {
	if err := reg.canEnrol(id); err != nil {
		return api.AgentCredentials{}, err
	}
	fail := func(err error) (api.AgentCredentials, error) {
		return api.AgentCredentials{}, fmt.Errorf("controller: enrol %s: %w", id, err)
	}
	kp, err := nkeys.CreateUser()
	if err != nil {
		return fail(err)
	}
	defer kp.Wipe()
	seed, err := kp.Seed()
	if err != nil {
		return fail(err)
	}
	pub, err := kp.PublicKey()
	if err != nil {
		return fail(err)
	}
	err = reg.enrolKey(ctx, id, pub, "agent-creds", func() (store.Identity, error) {
		prev, err := reg.store.Identity(id)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return store.Identity{}, err
		}
		_, err = reg.store.PutIdentity(id, pub, time.Now().UTC())
		return prev, err
	})
	if err != nil {
		return fail(err)
	}
	creds := api.AgentCredentials{AgentID: id, PublicKey: pub, Seed: string(seed), NATSURL: reg.hooks.NATSURL()}
	if reg.tls.NATS {
		creds.CAFingerprint = reg.tls.OwnCAFingerprint
	}
	return creds, nil
}

// canEnrol says whether agent id may be enrolled here: a *BadAgentIDError
// for an id that is not one, a *NoNATSAuthorityError when the controller
// issues no NATS identities.
func (reg *Registry) canEnrol(id string) error {
	if err := protocol.ValidateAgentID(id); err != nil {
		return &BadAgentIDError{err}
	}
	if auth := reg.NATSAuth(); auth != api.NATSAuthNkeys {
		return &NoNATSAuthorityError{Auth: auth}
	}
	return nil
}

// enrolKey makes public key pub agent id's NATS user, confined to the
// agent's own subjects, on the running server: record stores the
// identity and returns the one the agent had (zero when none), whose
// connections are then closed. Both ways of enrolling come here: a key
// the controller made (agent-creds) and one a device made (a join), by
// names which. record's error is returned as it is, nothing applied.
func (reg *Registry) enrolKey(ctx context.Context, id, pub, by string, record func() (store.Identity, error)) error {
	if err := reg.canEnrol(id); err != nil {
		return err
	}
	if !reg.natsEmbedded() {
		return errors.New("the controller has not started")
	}
	prev, err := record()
	if err != nil {
		return err
	}
	// The credentials go out only once the server admits them; the
	// enrolments made meanwhile share one reload (applyIdentities).
	if err := reg.applyIdentities(ctx); err != nil {
		return err
	}
	ev := reg.log.Info().Str("agent", id).Str("nkey", pub).Str("by", by)
	if prev.PublicKey != "" && prev.PublicKey != pub && prev.Active() && !reg.keyAdmitted(ctx, prev.PublicKey) {
		ev = ev.Int("closed", reg.hooks.Disconnect(prev.PublicKey)).Str("replaced", prev.PublicKey)
	}
	ev.Msg("agent enrolled")
	return nil
}

// Revoke removes agent id's NATS user from the running server and
// closes its connections: the agent can no longer connect until it is
// enrolled again. An agent without active credentials is ErrNotFound.
// It returns the identity revoked.
func (reg *Registry) Revoke(ctx context.Context, id string) (store.Identity, error) {
	if auth := reg.NATSAuth(); auth != api.NATSAuthNkeys {
		return store.Identity{}, &NoNATSAuthorityError{Auth: auth}
	}
	if !reg.natsEmbedded() {
		return store.Identity{}, errors.New("controller: revoke: the controller has not started")
	}
	ident, err := reg.store.RevokeIdentity(id, time.Now().UTC())
	if err != nil {
		return store.Identity{}, fmt.Errorf("controller: revoke %s: %w", id, err)
	}
	if err := reg.applyIdentities(ctx); err != nil {
		return ident, fmt.Errorf("controller: revoke %s: %w", id, err)
	}
	closed := 0
	if !reg.keyAdmitted(ctx, ident.PublicKey) {
		closed = reg.hooks.Disconnect(ident.PublicKey)
	}
	ended, err := reg.hooks.EndRevokedJobs(ctx, id, time.Now())
	reg.log.Info().Str("agent", id).Str("nkey", ident.PublicKey).Int("closed", closed).Int("jobs_cancelled", ended).Msg("agent revoked")
	return ident, err
}

// natsEmbedded says whether the embedded server runs, to change its users.
func (reg *Registry) natsEmbedded() bool {
	reg.authMu.Lock()
	defer reg.authMu.Unlock()
	return reg.embedded
}

// reloadAuth gives the running server the users the store holds. The
// server closes the connections of users it no longer has. authMu is
// held; applyIdentities is how changes call it, many in one reload.
func (reg *Registry) reloadAuth(ctx context.Context) error {
	users, err := reg.nkeyUsers(ctx)
	if err == nil {
		err = reg.hooks.Reload(users)
	}
	if err != nil {
		return fmt.Errorf("apply the agents' NATS identities: %w", err)
	}
	return nil
}

// nkeyUsers are the embedded server's users: the controller, unrestricted,
// and each agent whose identity is active, confined to its own subjects,
// one per public key (admittedKeys); a conflict is a health problem.
func (reg *Registry) nkeyUsers(ctx context.Context) ([]*server.NkeyUser, error) {
	pub, err := reg.ctlKey.PublicKey()
	if err != nil {
		return nil, err
	}
	users := []*server.NkeyUser{{Nkey: pub}}
	idents, err := reg.store.Identities(ctx)
	if err != nil {
		return nil, err
	}
	admitted, conflicts := admittedKeys(idents, pub)
	if len(conflicts) > 0 {
		err := identityConflictError(conflicts)
		reg.hooks.Conflicts(err)
		reg.log.Error().Err(err).Msg("agent identities in conflict")
	} else {
		reg.hooks.Conflicts(nil)
	}
	for _, id := range admitted {
		publish, subscribe := protocol.AgentPermissionSubjects(id.AgentID)
		users = append(users, &server.NkeyUser{Nkey: id.PublicKey, Permissions: &server.Permissions{
			Publish:   &server.SubjectPermission{Allow: publish},
			Subscribe: &server.SubjectPermission{Allow: subscribe},
		}})
	}
	return users, nil
}

// loadOrCreateSeed reads the user nkey seed at path, or creates one there
// readable by its owner only. A seed file others may read is made private
// with a warning.
func (reg *Registry) loadOrCreateSeed(path string) (nkeys.KeyPair, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		kp, err := nkeys.CreateUser()
		if err != nil {
			return nil, err
		}
		seed, err := kp.Seed()
		if err == nil {
			// Whole or not at all: a half-written key would lock the
			// controller out of its own server at the next start.
			_, err = atomicfile.Write(path, 0o600, func(w io.Writer) error {
				_, err := w.Write(append(seed, '\n'))
				return err
			})
		}
		if err != nil {
			return nil, fmt.Errorf("controller: create the controller's NATS key: %w", err)
		}
		return kp, nil
	}
	if err != nil {
		return nil, fmt.Errorf("controller: read the controller's NATS key: %w", err)
	}
	if fi, err := os.Stat(path); err == nil && fi.Mode().Perm()&0o077 != 0 {
		reg.log.Warn().Str("file", path).Str("mode", fi.Mode().Perm().String()).Msg("the controller's NATS key was readable by others; making it private")
		if err := os.Chmod(path, 0o600); err != nil {
			return nil, fmt.Errorf("controller: %w", err)
		}
	}
	kp, err := nkeys.ParseDecoratedNKey(data)
	if err == nil && !strings.HasPrefix(strings.TrimSpace(string(data)), "SU") {
		err = errors.New("not a user seed (SU...)")
	}
	if err != nil {
		return nil, fmt.Errorf("controller: %s: %w (remove it and restart to create a new one)", path, err)
	}
	return kp, nil
}
