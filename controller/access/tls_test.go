package access

import "testing"

func TestConnectableURL(t *testing.T) {
	for in, want := range map[string]string{
		"tls://0.0.0.0:4222":    "tls://127.0.0.1:4222",
		"nats://[::]:4222":      "nats://127.0.0.1:4222",
		"nats://10.0.0.5:4222":  "nats://10.0.0.5:4222",
		"tls://127.0.0.1:34567": "tls://127.0.0.1:34567",
	} {
		if got := ConnectableURL(in); got != want {
			t.Errorf("ConnectableURL(%q) = %q, want %q", in, got, want)
		}
	}
}
