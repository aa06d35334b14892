package access

import (
	"fmt"

	"github.com/rs/zerolog"

	"github.com/vlmfleet/vlmfleet/internal/private"
)

// PrivateDir makes dir 0700, or makes it private, saying so, when others
// may use it and ours says it is the controller's (private.MkdirAll).
func PrivateDir(dir string, ours func(string) bool, log zerolog.Logger) error {
	was, err := private.MkdirAll(dir, ours)
	if err != nil {
		return err
	}
	if was != 0 {
		log.Warn().Str("dir", dir).Str("was", fmt.Sprintf("%04o", was)).
			Msg("the directory was open to others; made it 0700 (the keys, token and store in it are checked on their own)")
	}
	return nil
}
