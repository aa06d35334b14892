package main

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/vlmfleet/vlmfleet/controller/api"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// cmdAgents is `vlmfleet agents`: what a sweep can select, and what the
// agents are doing now.
func cmdAgents(ctx context.Context, c *cli, args []string) error {
	if len(args) > 0 && args[0] == "forget" {
		return agentsForget(ctx, c, args[1:])
	}
	cl, asJSON, err := listCommand(c, "agents", "print the agents as GET /api/agents does", args)
	if err != nil {
		return err
	}
	agents, err := cl.Agents(ctx)
	if err != nil {
		return err
	}
	if asJSON {
		return writeJSON(c, agents)
	}
	if len(agents) == 0 {
		fmt.Fprintf(c.stdout, "no agent has announced itself to %s yet\n", cl.URL())
		return nil
	}
	writeAgents(c, agents, time.Now())
	return nil
}

// agentsForget is `vlmfleet agents forget ID`: an offline agent leaves the
// fleet, its results stay.
func agentsForget(ctx context.Context, c *cli, args []string) error {
	fs := newFlagSet(c, "agents forget")
	cf := addControllerFlags(fs)
	id, err := oneID(fs, args, "agent")
	if err != nil {
		return err
	}
	cl, err := cf.client(c)
	if err != nil {
		return err
	}
	if _, err := cl.ForgetAgent(ctx, id); err != nil {
		return err
	}
	fmt.Fprintf(c.stdout, "agent %s forgotten; its runs, jobs and sweeps are kept, and it is known again if it announces itself\n", id)
	return nil
}

// writeAgents prints one block per agent: a line of its state and power
// setting, then its labels, why its power is fixed, and its deployments
// (the ids a sweep's --deployments takes) and broken ones.
func writeAgents(c *cli, agents []api.AgentView, now time.Time) {
	tw := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "AGENT\tDEVICE\tPOWER\tSTATE\tJOB\tLAST SEEN")
	for _, a := range agents {
		dev := cmp.Or(a.Device.Name, "?")
		if a.Simulated {
			dev += " (simulated)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", a.ID, dev, agentPower(a), agentState(a), cmp.Or(a.JobID, "-"), ago(now, a.LastSeen))
	}
	_ = tw.Flush()
	for _, a := range agents {
		if len(a.Labels) > 0 {
			fmt.Fprintf(c.stdout, "\n%s labels: %s\n", a.ID, labelsText(a.Labels))
		}
		if a.Power != nil && !a.Power.Switchable && a.Power.Reason != "" {
			fmt.Fprintf(c.stdout, "\n%s power is fixed: %s\n", a.ID, a.Power.Reason)
		}
		if a.Upgrade != nil {
			fmt.Fprintf(c.stdout, "\n%s NEEDS AN UPGRADE: it %s\n", a.ID, a.Upgrade.Reason)
		}
		for _, d := range a.Duplicates {
			fmt.Fprintf(c.stdout, "\n%s: a SECOND PROCESS claims its id from host %s (instance %s), refused while the first (on %s) runs; stop one of them\n",
				a.ID, cmp.Or(d.Hostname, "unknown"), d.Instance, a.Hostname)
		}
		fmt.Fprintf(c.stdout, "\n%s deployments:\n", a.ID)
		if len(a.Deployments) == 0 && len(a.BrokenDeployments) == 0 {
			fmt.Fprintln(c.stdout, "  none")
		}
		for _, d := range a.Deployments {
			q := ""
			if d.Quantization != "" {
				q = " at " + d.Quantization
			}
			fmt.Fprintf(c.stdout, "  %-40s %s%s, %s\n", d.ID, d.Model, q, d.Engine)
		}
		for _, b := range a.BrokenDeployments {
			fmt.Fprintf(c.stdout, "  %-40s BROKEN: %s\n", cmp.Or(b.ID, "(no id)"), strings.TrimSpace(b.Reason))
		}
	}
}

// agentState is the agent's state as the table shows it: what needs an
// operator first (an upgrade, a second process), then revoked, then the
// heartbeat's.
func agentState(a api.AgentView) string {
	switch {
	case a.Upgrade != nil:
		return fmt.Sprintf("needs upgrade (runs %s, needs %s)", a.Upgrade.Version, a.Upgrade.NeedsVersion)
	case len(a.Duplicates) > 0:
		return a.State + ", second process refused"
	case !a.RevokedAt.IsZero() && !a.Online:
		return "revoked"
	}
	return a.State
}

// ago is how long since t, to the second: "4s ago", "3m0s ago"; "never".
func ago(now, t time.Time) string {
	if t.IsZero() {
		return "never"
	}
	return now.Sub(t).Round(time.Second).String() + " ago"
}

// agentPower is what the agent runs in now and whether a sweep may switch
// it: "15W, may switch", "450 W limit, fixed"; "-" where it says nothing.
func agentPower(a api.AgentView) string {
	now := protocol.PowerSetting{Mode: a.PowerMode, LimitW: a.PowerLimitW}.String()
	if a.Power == nil {
		return cmp.Or(now, "-")
	}
	switchable := "fixed"
	if a.Power.Switchable {
		switchable = "may switch"
	}
	return cmp.Or(now, "as found") + ", " + switchable
}

// labelsText is the labels as key=value, by key.
func labelsText(labels map[string]string) string {
	keys := slices.Sorted(maps.Keys(labels))
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + labels[k]
	}
	return strings.Join(parts, ", ")
}
