package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/vlmfleet/vlmfleet/agent"
)

// envJoin carries a join string instead of --join, which other users of
// the device could read in the process list.
const envJoin = "VLMFLEET_JOIN"

// joinOrApply enrols the agent with join when given (agent.Join), else
// gives it what an earlier join wrote (agent.ApplyJoined). With only, it
// joins and says where the credentials are, for the caller to exit.
func joinOrApply(ctx context.Context, c *cli, cfg agent.Config, join string, only bool) (agent.Config, error) {
	if join == "" {
		if only {
			return cfg, usageError{errors.New("--join-only needs --join STRING (or $" + envJoin + ")")}
		}
		return agent.ApplyJoined(cfg)
	}
	cfg, err := agent.Join(ctx, cfg, join, c.log)
	if err == nil && only {
		fmt.Fprintf(c.stdout, "joined: credentials in %s; start the agent without --join (it needs the join string no more)\n", cfg.NATSCredentials)
	}
	return cfg, err
}
