// Package loopback tells whether a host or a listen address names this
// machine only. The controller decides by it where TLS and tokens are
// needed, and bench whether this machine's hardware is the endpoint's.
package loopback

import (
	"net"
	"strings"
)

// Host reports whether host (a name or an address, without a port) names
// this machine: localhost or a loopback address.
func Host(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}

// Addr reports whether the host:port address addr accepts only this host.
func Addr(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	return err == nil && Host(host)
}
