package access

import "time"

// Options are what access reads of the controller's options; the
// controller's Options document each field.
type Options struct {
	DataDir, NATSURL, NATSListen, HTTPAddr string
	HTTPHosts                              []string
	APIToken, APITokenFile                 string
	PublicRead                             bool
	TLS, TLSCertFile, TLSKeyFile           string
	BodyStallTimeout                       time.Duration
	BodyMinRate                            int
}
