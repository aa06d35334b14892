package access

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/rs/zerolog"
	"github.com/vlmfleet/vlmfleet/controller/api"
	"github.com/vlmfleet/vlmfleet/internal/atomicfile"
	"github.com/vlmfleet/vlmfleet/internal/private"
)

// minTokenLen is the shortest token a token file may hold.
const minTokenLen = 16

// loadAPIToken returns opt.APIToken when set, else the token in the token
// file, which it creates (32 random bytes, hex, mode 0600) at the first
// start and logs once. A token file that others may read is refused.
func loadAPIToken(opt Options, log zerolog.Logger) (token, file string, err error) {
	if opt.APIToken != "" {
		if err := checkToken(opt.APIToken); err != nil {
			return "", "", fmt.Errorf("controller: Options.APIToken: %w", err)
		}
		return opt.APIToken, "", nil
	}
	file = opt.APITokenFile
	if file == "" {
		file = filepath.Join(opt.DataDir, api.TokenFileName)
	}
	token, err = readTokenFile(file)
	if errors.Is(err, fs.ErrNotExist) {
		if token, err = createTokenFile(file); err == nil {
			log.Info().Str("token", token).Str("file", file).
				Msg("created the API token: every change over HTTP needs it (the CLI reads it with --token-file FILE or $VLMFLEET_TOKEN); it is shown only this once")
		}
	}
	if err != nil {
		return "", "", fmt.Errorf("controller: API token: %w", err)
	}
	return token, file, nil
}

func readTokenFile(file string) (string, error) {
	f, err := os.Open(file)
	if err != nil {
		return "", err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return "", err
	}
	if err := private.File(file, st); err != nil {
		return "", err
	}
	buf := make([]byte, 4096)
	n, _ := f.Read(buf)
	token := strings.TrimSpace(string(buf[:n]))
	if err := checkToken(token); err != nil {
		return "", fmt.Errorf("%s: %w", file, err)
	}
	return token, nil
}

func checkToken(token string) error {
	if len(token) < minTokenLen {
		return fmt.Errorf("the token is %d characters, want at least %d", len(token), minTokenLen)
	}
	for _, r := range token {
		if r <= ' ' || r > '~' {
			return errors.New("the token holds a character other than printable ASCII")
		}
	}
	return nil
}

// createTokenFile writes a new token readable only by its owner, whole or
// not at all.
func createTokenFile(file string) (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	token := hex.EncodeToString(b)
	if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
		return "", err
	}
	if _, err := atomicfile.Write(file, 0o600, func(w io.Writer) error {
		_, err := io.WriteString(w, token+"\n")
		return err
	}); err != nil {
		return "", err
	}
	return token, nil
}
