package controller

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"

	"github.com/vlmfleet/vlmfleet/controller/api"
	"github.com/vlmfleet/vlmfleet/internal/testutil"
	"github.com/vlmfleet/vlmfleet/internal/tlsca"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// startTLS starts a controller on loopback with opt (its data in dir) and
// closes it when the test ends, or at once with close.
func startTLS(t *testing.T, dir string, opt Options) (c *Controller, close func()) {
	t.Helper()
	opt.DataDir = dir
	c = startControllerWith(t, opt)
	return c, func() {
		if err := c.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	}
}

// httpsClient trusts the CA file or the pin, for 127.0.0.1, and records
// the leaf certificate each server presents in *leaf.
func httpsClient(t *testing.T, caFile, pin string, leaf *[]byte) *http.Client {
	t.Helper()
	return &http.Client{Timeout: waitLimit, Transport: &http.Transport{TLSClientConfig: clientTLS(t, caFile, pin, leaf)}}
}

func clientTLS(t *testing.T, caFile, pin string, leaf *[]byte) *tls.Config {
	t.Helper()
	cfg, err := tlsca.ClientConfig(caFile, pin, "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	if leaf != nil {
		verify := cfg.VerifyConnection
		cfg.VerifyConnection = func(cs tls.ConnectionState) error {
			*leaf = cs.PeerCertificates[0].Raw
			if verify != nil {
				return verify(cs)
			}
			return nil
		}
	}
	return cfg
}

// healthTLS reads /api/health's tls object with hc.
func healthTLS(t *testing.T, hc *http.Client, c *Controller) api.TLSHealth {
	t.Helper()
	resp, err := hc.Get(c.HTTPURL() + "/api/health")
	if err != nil {
		t.Fatalf("health over https: %v", err)
	}
	defer resp.Body.Close()
	var h struct {
		NATS string        `json:"nats"`
		TLS  api.TLSHealth `json:"tls"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&h); err != nil || resp.StatusCode != http.StatusOK || h.NATS != "connected" {
		t.Fatalf("health: %s %+v %v", resp.Status, h, err)
	}
	return h.TLS
}

// With TLS on, both listeners serve TLS with the controller's own CA:
// NATS clients and HTTPS clients that pin it or trust its file get in,
// the controller's in-process connection works without TLS, a client
// that trusts neither or speaks plain NATS is refused, and the CA (so
// its pin) survives a restart.
func TestTLSOnWithTheControllersCA(t *testing.T) {
	dir := t.TempDir()
	c, closeCtl := startTLS(t, dir, Options{TLS: TLSOn})
	if !strings.HasPrefix(c.NATSURL(), "tls://127.0.0.1:") || !strings.HasPrefix(c.HTTPURL(), "https://127.0.0.1:") {
		t.Fatalf("URLs %s and %s, want tls:// and https://", c.NATSURL(), c.HTTPURL())
	}
	fp, caFile := c.TLSFingerprint(), c.CAFile()
	if !strings.HasPrefix(fp, "sha256:") || caFile != filepath.Join(dir, TLSDirName, "ca.pem") {
		t.Fatalf("fingerprint %q, CA file %q", fp, caFile)
	}
	if st, err := os.Stat(filepath.Join(dir, TLSDirName, "ca-key.pem")); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("CA key: %v %v, want mode 0600", st, err)
	}

	// HTTPS: trusted by the pin or the file; not by the system's roots.
	want := api.TLSHealth{HTTP: true, NATS: true, CAFingerprint: fp}
	for _, hc := range []*http.Client{httpsClient(t, "", fp, nil), httpsClient(t, caFile, "", nil)} {
		if got := healthTLS(t, hc, c); got != want {
			t.Errorf("health tls %+v, want %+v", got, want)
		}
	}
	if _, err := http.Get(c.HTTPURL() + "/api/health"); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("https without trusting the CA: %v, want a certificate error", err)
	}
	plain := "http://" + strings.TrimPrefix(c.HTTPURL(), "https://")
	if code := testutil.Status(t, http.MethodGet, plain+"/api/health", ""); code != http.StatusBadRequest {
		t.Errorf("plain HTTP to the TLS listener: %d, want 400", code)
	}

	// NATS: an enrolled agent that pins the CA connects and publishes.
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	seed, err := c.EnrolAgent(ctx, "a1")
	if err != nil {
		t.Fatal(err)
	}
	auth := []nats.Option{testutil.NkeySeed(t, seed), nats.CustomInboxPrefix(protocol.AgentInboxPrefix("a1"))}
	nc, js := testutil.ConnectJS(t, c.NATSURL(), append(auth, nats.Secure(clientTLS(t, "", fp, nil)))...)
	if !nc.TLSRequired() {
		t.Error("the agent's connection is not TLS")
	}
	hello, _ := json.Marshal(protocol.AgentHello{Schema: 1, Level: protocol.AgentLevel, AgentID: "a1", Hostname: "h", Simulated: true,
		Deployments: []protocol.Deployment{{ID: "d1", Engine: "sim", Model: "m"}}})
	if _, err := js.Publish(ctx, protocol.AgentSubject("a1", protocol.KindHello), hello); err != nil {
		t.Fatalf("publish over TLS: %v", err)
	}
	eventually(t, "the hello over TLS is stored", func() bool {
		agents, err := c.Agents(ctx)
		return err == nil && len(agents) == 1
	})
	// The same credentials without trust in the CA, or with another pin, are refused.
	for name, opts := range map[string][]nats.Option{
		"nats:// and no CA":   auth,
		"a pin of another CA": append(auth, nats.Secure(clientTLS(t, "", "sha256:"+strings.Repeat("ab", 32), nil))),
	} {
		url := strings.Replace(c.NATSURL(), "tls://", "nats://", 1)
		if _, err := nats.Connect(url, opts...); err == nil || !errors.Is(err, nats.ErrTLS) {
			t.Errorf("%s: %v, want a TLS error", name, err)
		}
	}
	// A client that speaks plain NATS gets no further than the INFO line.
	if resp := rawNATS(t, strings.TrimPrefix(c.NATSURL(), "tls://")); strings.Contains(resp, "PONG") || !strings.Contains(resp, `"tls_required":true`) {
		t.Errorf("plain NATS client got %q, want tls_required and no PONG", resp)
	}
	// Enrolling over HTTP says which CA to pin.
	req, _ := http.NewRequest(http.MethodPost, c.HTTPURL()+"/api/agents/a2/credentials", nil)
	req.Header.Set("Authorization", "Bearer "+c.APIToken())
	resp, err := httpsClient(t, caFile, "", nil).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var creds api.AgentCredentials
	if err := json.NewDecoder(resp.Body).Decode(&creds); err != nil || resp.StatusCode != http.StatusCreated || creds.CAFingerprint != fp {
		t.Errorf("credentials over https: %s %+v %v, want ca_fingerprint %s", resp.Status, creds, err, fp)
	}
	resp.Body.Close()

	closeCtl()
	c2, _ := startTLS(t, dir, Options{TLS: TLSOn})
	if c2.TLSFingerprint() != fp {
		t.Errorf("after a restart the fingerprint is %s, want %s", c2.TLSFingerprint(), fp)
	}
	if got := healthTLS(t, httpsClient(t, "", fp, nil), c2); got != want {
		t.Errorf("health tls after a restart %+v, want %+v", got, want)
	}
}

// rawNATS sends CONNECT and PING in clear and returns what the server
// answered before it closed the connection.
func rawNATS(t *testing.T, addr string) string {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, waitLimit)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(waitLimit))
	r := bufio.NewReader(conn)
	info, _ := r.ReadString('\n')
	_, _ = conn.Write([]byte("CONNECT {\"verbose\":false}\r\nPING\r\n"))
	var rest bytes.Buffer
	_, _ = rest.ReadFrom(r)
	return info + rest.String()
}

// With the operator's certificate (here one an operator's CA signed for
// 127.0.0.1), both listeners present it, on loopback too under auto, and
// the controller makes no CA of its own.
func TestTLSWithTheOperatorsCertificate(t *testing.T) {
	pki := t.TempDir()
	ca, err := tlsca.Open(pki, []string{"127.0.0.1"}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile := filepath.Join(pki, "server.pem"), filepath.Join(pki, "server-key.pem")
	pair, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	c, _ := startTLS(t, dir, Options{TLSCertFile: certFile, TLSKeyFile: keyFile})
	if c.TLSFingerprint() != ca.Fingerprint() || c.CAFile() != "" {
		t.Errorf("fingerprint %s (want the operator's CA %s), CA file %q (want none)", c.TLSFingerprint(), ca.Fingerprint(), c.CAFile())
	}
	if _, err := os.Stat(filepath.Join(dir, TLSDirName)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the controller made a CA of its own: %v", err)
	}
	var httpLeaf, natsLeaf []byte
	if got := healthTLS(t, httpsClient(t, ca.CAFile(), "", &httpLeaf), c); !got.HTTP || !got.NATS {
		t.Errorf("health tls %+v, want both", got)
	}
	nc, err := nats.Connect(c.NATSURL(), testutil.NkeyFile(t, c.NATSSeedFile()), nats.Secure(clientTLS(t, ca.CAFile(), "", &natsLeaf)))
	if err != nil {
		t.Fatal(err)
	}
	nc.Close()
	for name, got := range map[string][]byte{"HTTP": httpLeaf, "NATS": natsLeaf} {
		if !bytes.Equal(got, pair.Certificate[0]) {
			t.Errorf("%s presented another certificate than --tls-cert", name)
		}
	}
}

// Under auto, listeners on loopback stay plain and no CA is made; one off
// loopback gets TLS with a certificate for every interface address. The
// options are checked; off says loudly that a listener off loopback is
// in clear.
func TestTLSAutoOffAndOptions(t *testing.T) {
	dir := t.TempDir()
	c, _ := startTLS(t, dir, Options{})
	if !strings.HasPrefix(c.NATSURL(), "nats://") || !strings.HasPrefix(c.HTTPURL(), "http://") || c.TLSFingerprint() != "" || c.CAFile() != "" {
		t.Errorf("auto on loopback: %s %s %q %q, want plain", c.NATSURL(), c.HTTPURL(), c.TLSFingerprint(), c.CAFile())
	}
	if _, err := os.Stat(filepath.Join(dir, TLSDirName)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("auto on loopback made a CA: %v", err)
	}
	var h map[string]any
	getJSON(t, c.HTTPURL()+"/api/health", &h)
	if tl, _ := h["tls"].(map[string]any); tl == nil || tl["http"] != false || tl["nats"] != false {
		t.Errorf("health tls %v, want http and nats false", h["tls"])
	}

	var logs bytes.Buffer
	opt := Options{DataDir: t.TempDir(), NATSListen: "127.0.0.1:-1", HTTPAddr: "0.0.0.0:0", HTTPHosts: []string{"controller.lab:8443"}, Log: zerolog.New(&logs)}
	pub, err := New(opt)
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Close()
	if !pub.tls.HTTP || pub.tls.NATS {
		t.Errorf("auto, HTTP on 0.0.0.0 and NATS on loopback: tls %+v, want HTTP only", pub.tls)
	}
	leaf := pub.tls.HTTPConfig.Certificates[0].Leaf
	names := []string{"localhost", "127.0.0.1", "controller.lab"}
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && !n.IP.IsLoopback() && !n.IP.IsLinkLocalUnicast() {
			names = append(names, n.IP.String())
		}
	}
	for _, n := range names {
		if err := leaf.VerifyHostname(n); err != nil {
			t.Errorf("the certificate for a listener on 0.0.0.0: %v", err)
		}
	}

	opt.TLS, opt.DataDir = TLSOff, t.TempDir()
	off, err := New(opt)
	if err != nil {
		t.Fatal(err)
	}
	defer off.Close()
	if off.tls.On() || !strings.Contains(logs.String(), "INSECURE: TLS is off") {
		t.Errorf("off: tls %+v, log %s", off.tls, logs.String())
	}

	for _, c := range []struct {
		opt  Options
		want string
	}{
		{Options{TLS: "yes"}, "want auto, on or off"},
		{Options{TLSCertFile: "c.pem"}, "go together"},
		{Options{TLS: TLSOff, TLSCertFile: "c.pem", TLSKeyFile: "k.pem"}, "exclude each other"},
		{Options{TLSCertFile: "missing.pem", TLSKeyFile: "missing-key.pem"}, "missing.pem"},
	} {
		c.opt.DataDir = t.TempDir()
		_, err := New(c.opt)
		testutil.WantError(t, err, c.want)
	}
}

// An operator's certificate renewed on disk is what both listeners present
// from then on, without a restart.
func TestTLSOperatorsCertificateRenewedOnDisk(t *testing.T) {
	pki := t.TempDir()
	ca, err := tlsca.Open(pki, []string{"127.0.0.1"}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile := filepath.Join(pki, "server.pem"), filepath.Join(pki, "server-key.pem")
	first, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := startTLS(t, t.TempDir(), Options{TLSCertFile: certFile, TLSKeyFile: keyFile})
	// Opening the CA for another name makes it sign a new server pair in
	// place, as a renewal would.
	if _, err := tlsca.Open(pki, []string{"127.0.0.1", "renewed.example"}, time.Now()); err != nil {
		t.Fatal(err)
	}
	renewed, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(first.Certificate[0], renewed.Certificate[0]) {
		t.Fatal("the renewal left the certificate as it was")
	}
	presents := func(leaf []byte) bool { return bytes.Equal(leaf, renewed.Certificate[0]) }
	deadline := time.Now().Add(waitLimit)
	for {
		var httpLeaf, natsLeaf []byte
		healthTLS(t, httpsClient(t, ca.CAFile(), "", &httpLeaf), c)
		nc, err := nats.Connect(c.NATSURL(), testutil.NkeyFile(t, c.NATSSeedFile()), nats.Secure(clientTLS(t, ca.CAFile(), "", &natsLeaf)))
		if err != nil {
			t.Fatal(err)
		}
		nc.Close()
		if presents(httpLeaf) && presents(natsLeaf) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %v the listeners still present the old certificate (HTTP renewed: %v, NATS renewed: %v)", waitLimit, presents(httpLeaf), presents(natsLeaf))
		}
		time.Sleep(100 * time.Millisecond)
	}
	if c.TLSFingerprint() != ca.Fingerprint() {
		t.Errorf("fingerprint %s, want the CA's %s", c.TLSFingerprint(), ca.Fingerprint())
	}
}
