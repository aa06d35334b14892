package main

import (
	"cmp"
	"context"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/vlmfleet/vlmfleet/controller/api"
)

// cmdAgents is `vlmfleet agents`: what a sweep can select, and what the
// agents are doing now.
func cmdAgents(ctx context.Context, c *cli, args []string) error {
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

// writeAgents prints one block per agent: a line of its state, then its
// deployments (the ids a sweep's --deployments takes) and broken ones.
func writeAgents(c *cli, agents []api.AgentView, now time.Time) {
	tw := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "AGENT\tDEVICE\tSTATE\tJOB\tLAST SEEN")
	for _, a := range agents {
		dev := cmp.Or(a.Device.Name, "?")
		if a.Simulated {
			dev += " (simulated)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", a.ID, dev, a.State, cmp.Or(a.JobID, "-"), ago(now, a.LastSeen))
	}
	_ = tw.Flush()
	for _, a := range agents {
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

// ago is how long since t, to the second: "4s ago", "3m0s ago"; "never".
func ago(now, t time.Time) string {
	if t.IsZero() {
		return "never"
	}
	return now.Sub(t).Round(time.Second).String() + " ago"
}
