package main

import (
	"context"
	"errors"
	"flag"
	"fmt"

	"github.com/vlmfleet/vlmfleet/agent"
	"github.com/vlmfleet/vlmfleet/controller/client"
)

// cmdAgentCreds dispatches `vlmfleet agent-creds create|revoke`.
func cmdAgentCreds(ctx context.Context, c *cli, args []string) error {
	return subcommand(ctx, c, args, map[string]func(context.Context, *cli, []string) error{
		"create": agentCredsCreate, "revoke": agentCredsRevoke,
	}, "create ID | revoke ID", groupHelp("issue or revoke an agent's NATS credentials (docs/security.md)", "agent-creds create", "agent-creds revoke"))
}

// agentCredsArgs parses a subcommand's flags and its one argument, the
// agent id, and makes the client of the controller.
func agentCredsArgs(c *cli, fs *flag.FlagSet, args []string) (string, *client.Client, error) {
	ctl := fs.String("controller", "", "controller URL (default $"+client.EnvURL+", else "+client.DefaultURL+")")
	tokenFile := tokenFileFlag(fs)
	pos, err := parseInterspersed(fs, args)
	if err == nil && len(pos) != 1 {
		err = usageError{errors.New("want one agent id")}
	}
	if err != nil {
		return "", nil, err
	}
	cl, err := newClient(c, *ctl, *tokenFile)
	return pos[0], cl, err
}

func agentCredsCreate(ctx context.Context, c *cli, args []string) error {
	fs := newFlagSet(c, "agent-creds create")
	out := fs.String("out", "", "file to write the credentials to (default ./ID.nk)")
	force := fs.Bool("force", false, "replace FILE if it exists")
	id, cl, err := agentCredsArgs(c, fs, args)
	if err != nil {
		return err
	}
	if *out == "" {
		*out = agent.CredentialsFile(id)
	}
	// Checked before asking: new credentials replace the agent's old ones.
	if err := agent.CheckCredentialsTarget(*out, *force); err != nil {
		return err
	}
	creds, err := cl.CreateAgentCredentials(ctx, id)
	if err != nil {
		return err
	}
	if err := agent.WriteCredentials(*out, creds.Seed, *force); err != nil {
		return fmt.Errorf("%w (the agent's old credentials are replaced all the same: run this again)", err)
	}
	fmt.Fprintf(c.stdout, "wrote agent %s's NATS credentials to %s (keep it private; it is shown nowhere else)\n"+
		"start the agent with (on another host: copy the file there, use the controller's address):\n"+
		"  vlmfleet agent --id %s --nats-url %s --nats-credentials %s%s --config agent.yaml\n", id, *out, id, creds.NATSURL, *out,
		map[bool]string{true: " --nats-ca-pin " + creds.CAFingerprint}[creds.CAFingerprint != ""])
	return nil
}

func agentCredsRevoke(ctx context.Context, c *cli, args []string) error {
	id, cl, err := agentCredsArgs(c, newFlagSet(c, "agent-creds revoke"), args)
	if err != nil {
		return err
	}
	rev, err := cl.RevokeAgentCredentials(ctx, id)
	if err != nil {
		return err
	}
	fmt.Fprintf(c.stdout, "revoked agent %s's NATS credentials at %s; its connection is closed\n", id, rev.RevokedAt.Format("2006-01-02 15:04:05 MST"))
	return nil
}
