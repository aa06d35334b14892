package access

import (
	"crypto/tls"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/vlmfleet/vlmfleet/internal/tlsca"
)

// certCheckEvery bounds how often the operator's certificate files are
// looked at: once a second at most, whatever the rate of handshakes.
const certCheckEvery = time.Second

// certReloader serves the operator's certificate (--tls-cert, --tls-key)
// and loads it again when either file changes on disk, so that a
// certificate renewed by the site's tooling (certbot, an internal CA's
// agent) is served without restarting the controller and its lab. A pair
// that does not load (a renewal half written) keeps the last good one in
// service and is tried again at the next change.
type certReloader struct {
	certFile, keyFile string
	log               zerolog.Logger

	mu      sync.Mutex
	cert    *tls.Certificate
	stamp   string // the files' sizes and modification times when loaded
	checked time.Time
}

func newCertReloader(certFile, keyFile string, log zerolog.Logger) (*certReloader, error) {
	r := &certReloader{certFile: certFile, keyFile: keyFile, log: log}
	stamp, err := r.fileStamp()
	if err != nil {
		return nil, err
	}
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("controller: --tls-cert %s, --tls-key %s: %w", certFile, keyFile, err)
	}
	r.cert, r.stamp, r.checked = &cert, stamp, time.Now()
	return r, nil
}

// fileStamp identifies the files' contents cheaply: a renewal replaces or
// rewrites them, changing a size or a modification time.
func (r *certReloader) fileStamp() (string, error) {
	var stamp string
	for _, f := range []string{r.certFile, r.keyFile} {
		fi, err := os.Stat(f)
		if err != nil {
			return "", fmt.Errorf("controller: TLS certificate: %w", err)
		}
		stamp += fmt.Sprintf("%d/%d;", fi.Size(), fi.ModTime().UnixNano())
	}
	return stamp, nil
}

// fingerprint is the pin of the chain's last certificate, as agents pin it.
func (r *certReloader) fingerprint() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return tlsca.Fingerprint(r.cert.Certificate[len(r.cert.Certificate)-1])
}

// getCertificate is tls.Config.GetCertificate.
func (r *certReloader) getCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if now := time.Now(); now.Sub(r.checked) >= certCheckEvery {
		r.checked = now
		r.reloadLocked()
	}
	return r.cert, nil
}

func (r *certReloader) reloadLocked() {
	stamp, err := r.fileStamp()
	if err != nil || stamp == r.stamp {
		return
	}
	cert, err := tls.LoadX509KeyPair(r.certFile, r.keyFile)
	if err != nil {
		r.log.Warn().Err(err).Str("cert", r.certFile).Msg("the TLS certificate changed on disk but does not load; still serving the previous one")
		return
	}
	old := tlsca.Fingerprint(r.cert.Certificate[len(r.cert.Certificate)-1])
	r.cert, r.stamp = &cert, stamp
	ev := r.log.Info()
	if pin := tlsca.Fingerprint(cert.Certificate[len(cert.Certificate)-1]); pin != old {
		ev = r.log.Warn().Str("new_pin", pin).Str("old_pin", old)
	}
	ev.Str("cert", r.certFile).Msg("serving the TLS certificate renewed on disk (agents that pinned another CA need the new pin)")
}
