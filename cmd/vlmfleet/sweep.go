package main

import (
	"context"
	"errors"
)

// STUB: the owner replaces this file.
func cmdSweep(ctx context.Context, c *cli, args []string) error {
	return errors.New("not implemented yet")
}
