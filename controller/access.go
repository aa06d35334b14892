package controller

import (
	"github.com/vlmfleet/vlmfleet/controller/access"
	"github.com/vlmfleet/vlmfleet/controller/api"
)

// TLS modes (Options.TLS): access.TLSAuto, the default, access.TLSOn and
// access.TLSOff.
const (
	TLSAuto = access.TLSAuto
	TLSOn   = access.TLSOn
	TLSOff  = access.TLSOff
)

// TLSDirName is the directory in the data dir that holds the controller's
// own CA (access.TLSDirName).
const TLSDirName = access.TLSDirName

// accessOptions are what the access room reads of opt.
func accessOptions(opt Options) access.Options {
	return access.Options{DataDir: opt.DataDir, NATSURL: opt.NATSURL, NATSListen: opt.NATSListen, HTTPAddr: opt.HTTPAddr,
		HTTPHosts: opt.HTTPHosts, APIToken: opt.APIToken, APITokenFile: opt.APITokenFile, PublicRead: opt.PublicRead,
		TLS: opt.TLS, TLSCertFile: opt.TLSCertFile, TLSKeyFile: opt.TLSKeyFile,
		BodyStallTimeout: opt.BodyStallTimeout, BodyMinRate: opt.BodyMinRate}
}

// APIToken is the token that every mutation of the HTTP API (and every
// read, when reads are not open) must carry as "Authorization: Bearer
// <token>".
func (c *Controller) APIToken() string { return c.sec.Token() }

// APITokenFile is the file the token was read from or created in; empty
// when Options.APIToken gave it.
func (c *Controller) APITokenFile() string { return c.sec.TokenFile() }

// TLSFingerprint is the pin of the CA behind the controller's TLS
// certificate ("sha256:<hex>"), for agents' --nats-ca-pin and the CLI's
// VLMFLEET_CA_PIN; empty when no listener has TLS.
func (c *Controller) TLSFingerprint() string { return c.tls.Fingerprint() }

// CAFile is the controller's own CA certificate (<DataDir>/tls/ca.pem), to
// copy to agents and CLIs; empty when no listener has TLS or the
// operator gave the certificate.
func (c *Controller) CAFile() string { return c.tls.CAFile() }

func (c *Controller) tlsHealth() api.TLSHealth {
	return api.TLSHealth{HTTP: c.tls.HTTP, NATS: c.tls.NATS, CAFingerprint: c.TLSFingerprint()}
}
