package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/vlmfleet/vlmfleet/controller/api"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// cmdJoinToken dispatches `vlmfleet join-token create|list|revoke`.
func cmdJoinToken(ctx context.Context, c *cli, args []string) error {
	return subcommand(ctx, c, args, map[string]func(context.Context, *cli, []string) error{
		"create": joinTokenCreate, "list": joinTokenList, "revoke": joinTokenRevoke,
	}, "create | list | revoke ID", groupHelp("let devices enrol themselves with a join string (docs/security.md)",
		"join-token create", "join-token list", "join-token revoke"))
}

func joinTokenCreate(ctx context.Context, c *cli, args []string) error {
	fs := newFlagSet(c, "join-token create")
	cf := addControllerFlags(fs)
	ttl := fs.Duration("ttl", api.DefaultJoinTokenTTL, "how long the token lets devices join (1m to 720h)")
	uses := fs.Int("uses", 1, fmt.Sprintf("how many devices it may enrol (1 to %d)", api.MaxJoinTokenUses))
	labels := fs.String("labels", "", "labels given to each agent it enrols, k=v,k=v (they win over the agent's own on the same key)")
	reenrol := fs.Bool("reenrol", false, "let it replace the key of an agent id already enrolled (a device reinstalled)")
	joinURL := fs.String("url", "", "the controller's https:// address as devices reach it (default: the one --controller names, unless loopback)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Errorf("unexpected argument %q", fs.Arg(0))}
	}
	req := api.JoinTokenRequest{TTLSeconds: int64(ttl.Seconds()), Uses: *uses, Reenrol: *reenrol, URL: *joinURL}
	var err error
	if req.Labels, err = protocol.ParseLabels("--labels", *labels); err != nil {
		return usageError{err}
	}
	if len(req.Labels) == 0 {
		req.Labels = nil
	}
	if *ttl < time.Minute || *ttl > api.MaxJoinTokenTTL {
		return usageError{fmt.Errorf("--ttl %s: want 1m to %s", *ttl, api.MaxJoinTokenTTL)}
	}
	cl, err := cf.client(c)
	if err != nil {
		return err
	}
	t, err := cl.CreateJoinToken(ctx, req)
	if err != nil {
		return err
	}
	fmt.Fprintln(c.stdout, t.Join)
	fmt.Fprintf(c.stderr, "join token %s: %d use(s) until %s, for the controller at %s; shown this once, keep it like a password.\n"+
		"On each device: vlmfleet agent --join '<the line above>' --config agent.yaml  (or deploy/install.sh agent --join '...')\n",
		t.ID, t.Uses, t.ExpiresAt.Local().Format("2006-01-02 15:04 MST"), t.URL)
	return nil
}

func joinTokenList(ctx context.Context, c *cli, args []string) error {
	cl, asJSON, err := listCommand(c, "join-token list", "print the tokens as GET /api/join-tokens does", args)
	if err != nil {
		return err
	}
	ts, err := cl.JoinTokens(ctx)
	if err != nil {
		return err
	}
	if asJSON {
		return writeJSON(c, ts)
	}
	if len(ts) == 0 {
		fmt.Fprintln(c.stdout, "no join tokens (vlmfleet join-token create makes one)")
		return nil
	}
	tw := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSTATE\tCREATED\tEXPIRES\tUSED\tLEFT\tLABELS\tREENROL\tENROLLED")
	for _, t := range ts {
		var agents []string
		for _, e := range t.Enrolments {
			agents = append(agents, e.AgentID)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d/%d\t%d\t%s\t%t\t%s\n", t.ID, t.State, t.CreatedAt.Local().Format("2006-01-02 15:04"),
			t.ExpiresAt.Local().Format("2006-01-02 15:04"), t.Used, t.Uses, t.UsesLeft, labelList(t.Labels), t.Reenrol, strings.Join(agents, ","))
	}
	return tw.Flush()
}

func labelList(m map[string]string) string {
	if len(m) == 0 {
		return "-"
	}
	var out []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out = append(out, k+"="+m[k])
	}
	return strings.Join(out, ",")
}

func joinTokenRevoke(ctx context.Context, c *cli, args []string) error {
	fs := newFlagSet(c, "join-token revoke")
	cf := addControllerFlags(fs)
	pos, err := parseInterspersed(fs, args)
	if err == nil && len(pos) != 1 {
		err = usageError{errors.New("want one join token id (vlmfleet join-token list shows them)")}
	}
	if err != nil {
		return err
	}
	cl, err := cf.client(c)
	if err != nil {
		return err
	}
	t, err := cl.RevokeJoinToken(ctx, pos[0])
	if err != nil {
		return err
	}
	fmt.Fprintf(c.stdout, "revoked join token %s at %s: it enrols no more devices; the %d it enrolled keep their credentials (agent-creds revoke ID ends those)\n",
		t.ID, t.RevokedAt.Local().Format("2006-01-02 15:04:05 MST"), t.Used)
	return nil
}
