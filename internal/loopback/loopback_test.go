package loopback

import "testing"

func TestHost(t *testing.T) {
	for host, want := range map[string]bool{
		"127.0.0.1": true, "127.1.2.3": true, "::1": true, "localhost": true, "LocalHost": true,
		"0.0.0.0": false, "10.0.0.5": false, "orin-nx.lab": false, "": false,
	} {
		if got := Host(host); got != want {
			t.Errorf("Host(%q) = %v, want %v", host, got, want)
		}
	}
}

func TestAddr(t *testing.T) {
	for addr, want := range map[string]bool{
		"127.0.0.1:4222": true, "[::1]:8080": true, "localhost:0": true,
		"0.0.0.0:4222": false, ":4222": false, "10.0.0.5:80": false, "127.0.0.1": false,
	} {
		if got := Addr(addr); got != want {
			t.Errorf("Addr(%q) = %v, want %v", addr, got, want)
		}
	}
}
