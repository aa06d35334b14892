package agent

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"

	"github.com/vlmfleet/vlmfleet/protocol"
)

// CredentialsFile is where `vlmfleet agent-creds create ID` writes agent
// id's credentials unless told otherwise.
func CredentialsFile(id string) string { return id + ".nk" }

// CheckCredentialsTarget returns the error WriteCredentials would return
// for an existing path, so that a caller can check before it asks for
// credentials.
func CheckCredentialsTarget(path string, force bool) error {
	if _, err := os.Lstat(path); err == nil && !force {
		return existsError(path)
	}
	return nil
}

func existsError(path string) error {
	return fmt.Errorf("%s exists; remove it or pass --force to replace it", path)
}

// WriteCredentials writes the nkey seed to path, readable by its owner
// only. An existing file is refused unless force is set, so that
// credentials in use are not replaced by accident.
func WriteCredentials(path, seed string, force bool) error {
	if _, err := nkeys.FromSeed([]byte(seed)); err != nil {
		return fmt.Errorf("credentials for %s: not an nkey seed: %w", path, err)
	}
	flags := os.O_WRONLY | os.O_CREATE | os.O_EXCL
	if force {
		flags = os.O_WRONLY | os.O_CREATE | os.O_TRUNC
	}
	f, err := os.OpenFile(path, flags, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return existsError(path)
	}
	if err != nil {
		return err
	}
	err = f.Chmod(0o600) // an existing file replaced with force keeps its mode otherwise
	if err == nil {
		_, err = f.WriteString(seed + "\n")
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("writing credentials %s: %w", path, err)
	}
	return nil
}

// natsAuth is the option that signs the agent in with its credentials, or
// nil when it has none (a controller running --insecure, or an external
// server that takes a user and password in the URL).
func (c Config) natsAuth() (nats.Option, error) {
	switch {
	case c.NATSCredentials != "" && c.NATSSeed != "":
		return nil, errors.New("nats_credentials and an in-memory seed exclude each other")
	case c.NATSCredentials != "":
		opt, err := nats.NkeyOptionFromSeed(c.NATSCredentials)
		if err != nil {
			return nil, fmt.Errorf("nats_credentials %s: want the file `vlmfleet agent-creds create %s` wrote: %w", c.NATSCredentials, c.ID, err)
		}
		return opt, nil
	case c.NATSSeed != "":
		kp, err := nkeys.FromSeed([]byte(strings.TrimSpace(c.NATSSeed)))
		if err != nil {
			return nil, fmt.Errorf("nats seed: %w", err)
		}
		pub, err := kp.PublicKey()
		if err != nil {
			return nil, fmt.Errorf("nats seed: %w", err)
		}
		return nats.Nkey(pub, kp.Sign), nil
	}
	return nil, nil
}

// credentialsName names the agent's credentials in errors: the file, or
// "" when it has none.
func (c Config) credentialsName() string {
	switch {
	case c.NATSCredentials != "":
		return c.NATSCredentials
	case c.NATSSeed != "":
		return "(given in memory)"
	}
	return ""
}

// RefusedError says that the NATS server refused the agent's credentials,
// or that it wants some and the agent has none. The agent stops: trying
// again with the same credentials cannot succeed.
type RefusedError struct {
	AgentID string
	URL     string
	// Credentials names the agent's credentials ("" when it has none).
	Credentials string
	Err         error
}

func (e *RefusedError) Error() string {
	if errors.Is(e.Err, nats.ErrNkeysNotSupported) {
		return fmt.Sprintf("NATS at %s takes no credentials (a controller started with --insecure?); start agent %s without --nats-credentials",
			protocol.RedactURL(e.URL), e.AgentID)
	}
	if errors.Is(e.Err, nats.ErrPermissionViolation) {
		return fmt.Sprintf("NATS at %s refused agent %s its own subjects (%v): the credentials %s are another agent's, and work only for the id "+
			"they were created for; start this agent with that id, or create credentials for %s (vlmfleet agent-creds create %s, or join with --id %s)",
			protocol.RedactURL(e.URL), e.AgentID, e.Err, e.Credentials, e.AgentID, e.AgentID, e.AgentID)
	}
	if e.Credentials == "" {
		return fmt.Sprintf("NATS at %s refused agent %s (%v): the controller requires credentials: create them with "+
			"`vlmfleet agent-creds create %s` where the controller's API is reachable, then start the agent with "+
			"--nats-credentials %s (or nats_credentials: in its config); or enrol it with a join string: vlmfleet agent --join STRING (vlmfleet join-token create)",
			protocol.RedactURL(e.URL), e.AgentID, e.Err, e.AgentID, CredentialsFile(e.AgentID))
	}
	return fmt.Sprintf("NATS at %s refused agent %s's credentials %s (%v): they were revoked or replaced, or belong to "+
		"another controller; create new ones with `vlmfleet agent-creds create %s`",
		protocol.RedactURL(e.URL), e.AgentID, e.Credentials, e.Err, e.AgentID)
}

func (e *RefusedError) Unwrap() error { return e.Err }

// authError says whether err is the server refusing the connection's
// credentials.
func authError(err error) bool {
	return errors.Is(err, nats.ErrAuthorization) || errors.Is(err, nats.ErrAuthExpired) ||
		errors.Is(err, nats.ErrAuthRevoked) || errors.Is(err, nats.ErrNkeysNotSupported)
}

// ownSubjectRefused says whether err is the server refusing the agent one
// of its own subjects (its messages, its control subject): what only
// another agent's credentials bring about.
func (a *Agent) ownSubjectRefused(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, `"`+protocol.AgentSubject(a.cfg.ID, "")) || strings.Contains(msg, `"`+protocol.ControlSubject(a.cfg.ID)+`"`)
}
