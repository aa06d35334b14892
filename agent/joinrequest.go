package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/vlmfleet/vlmfleet/internal/tlsca"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// joinTimeout bounds the join's one request.
const joinTimeout = 30 * time.Second

// postJoin sends the join and reads the answer: 201 with how to reach
// NATS; otherwise the controller's one line, or what kept the request
// from it.
func postJoin(ctx context.Context, js protocol.JoinString, req protocol.JoinRequest) (protocol.JoinAnswer, error) {
	u := strings.TrimRight(js.URL, "/") + "/api/join"
	cfg, err := tlsca.ClientConfig("", js.CAPin, hostName(js.URL))
	if err != nil {
		return protocol.JoinAnswer{}, err
	}
	body, _ := json.Marshal(req)
	ctx, cancel := context.WithTimeout(ctx, joinTimeout)
	defer cancel()
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(body))
	if err != nil {
		return protocol.JoinAnswer{}, fmt.Errorf("join: %w", err)
	}
	hreq.Header.Set("Content-Type", "application/json")
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: cfg, Proxy: http.ProxyFromEnvironment}}
	defer hc.CloseIdleConnections()
	resp, err := hc.Do(hreq)
	if err != nil {
		if tlsca.VerificationFailed(err) {
			return protocol.JoinAnswer{}, fmt.Errorf("the controller at %s does not match the join string's CA pin (%v): "+
				"the join string is for another controller, or its CA changed; ask its operator for a new join string", js.URL, err)
		}
		if cause := errors.Unwrap(err); cause != nil {
			err = cause // the request's URL is said once, below
		}
		return protocol.JoinAnswer{}, fmt.Errorf("cannot reach the controller at %s: %w (check the address and that this device can reach it)", js.URL, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		return protocol.JoinAnswer{}, fmt.Errorf("join: reading the controller's answer: %w", err)
	}
	if resp.StatusCode != http.StatusCreated {
		var e struct {
			Error string `json:"error"`
		}
		if json.Unmarshal(data, &e) != nil || e.Error == "" {
			e.Error = fmt.Sprintf("HTTP %d", resp.StatusCode)
		}
		return protocol.JoinAnswer{}, fmt.Errorf("the controller at %s refused the join: %s", js.URL, e.Error)
	}
	return protocol.DecodeJoinAnswer(data)
}

// hostName is the host of a URL already checked, without port or
// brackets: the name the certificate must carry.
func hostName(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return ""
	}
	return u.Hostname()
}
