package client

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/vlmfleet/vlmfleet/controller/api"
)

// Where the CLI finds the controller's API token: the --token-file flag,
// else $EnvToken (the token itself), else $EnvTokenFile, else
// DefaultTokenFile when it exists.
const (
	EnvToken     = "VLMFLEET_TOKEN"
	EnvTokenFile = "VLMFLEET_TOKEN_FILE"
)

// DefaultTokenFile is the token file of a controller started here with
// its default data directory (./vlmfleet-data).
var DefaultTokenFile = filepath.Join("vlmfleet-data", api.TokenFileName)

// TokenHint says how to give the CLI the token; it ends the message of a
// 401 answer.
const TokenHint = "the controller wants its API token: pass --token-file <data-dir>/" + api.TokenFileName + " or set " + EnvToken

// WithToken sends token as "Authorization: Bearer <token>" with every
// request; empty sends none.
func WithToken(token string) Option { return func(c *Client) { c.token = token } }

// Token picks the API token: the file flagValue (the --token-file flag)
// names, else getenv(EnvToken), else the file getenv(EnvTokenFile) names,
// else DefaultTokenFile if there is one, else "" (a controller on loopback
// answers reads without it). Its error names the flag or variable.
func Token(flagValue string, getenv func(string) string) (string, error) {
	if flagValue != "" {
		return readToken("--token-file", flagValue)
	}
	if getenv != nil {
		if v := strings.TrimSpace(getenv(EnvToken)); v != "" {
			return v, nil
		}
		if v := getenv(EnvTokenFile); v != "" {
			return readToken(EnvTokenFile, v)
		}
	}
	tok, err := readToken("the default token file", DefaultTokenFile)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	return tok, err
}

func readToken(source, path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("%s: %w", source, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, 4096))
	if err != nil {
		return "", fmt.Errorf("%s: %w", source, err)
	}
	tok := strings.TrimSpace(string(data))
	if tok == "" || strings.ContainsAny(tok, " \t\r\n") {
		return "", fmt.Errorf("%s %s: want the API token alone on one line", source, path)
	}
	return tok, nil
}

// authorize adds the token to req.
func (c *Client) authorize(req *http.Request) {
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
}
