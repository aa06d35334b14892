package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/vlmfleet/vlmfleet/agent/simengine"
)

// freePort asks the kernel for a free loopback port. The listener is closed
// before the engine binds, so another process can take the port in between;
// the caller retries once when the engine reports a bind failure.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("free port: %w", err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	if err := ln.Close(); err != nil {
		return 0, fmt.Errorf("free port: %w", err)
	}
	return port, nil
}

// defaultProbeTimeout bounds each readiness request: a socket can accept
// long before the engine behind it answers.
const defaultProbeTimeout = 2 * time.Second

// prober makes the short HTTP requests that decide readiness and read an
// engine's version and properties.
type prober struct {
	client  *http.Client
	apiKey  string
	timeout time.Duration
}

func newProber(apiKey string, timeout time.Duration) *prober {
	return &prober{
		client: &http.Client{Transport: &http.Transport{
			Proxy:             nil, // loopback and configured URLs only; never through a proxy from the environment
			DisableKeepAlives: true,
		}},
		apiKey:  apiKey,
		timeout: timeout,
	}
}

// get fetches url with a per-request timeout and returns status and up to 1 MiB of body.
func (p *prober) get(ctx context.Context, url string) (int, []byte, error) {
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, nil, err
	}
	if p.apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+p.apiKey)
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return resp.StatusCode, nil, err
	}
	return resp.StatusCode, body, nil
}

// getJSON fetches url and decodes a 200 answer into v.
func (p *prober) getJSON(ctx context.Context, url string, v any) error {
	code, body, err := p.get(ctx, url)
	if err != nil {
		return err
	}
	if code != http.StatusOK {
		return fmt.Errorf("GET %s: HTTP %d: %s", url, code, snippet(body))
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("GET %s: %w", url, err)
	}
	return nil
}

// modelList is the OpenAI /v1/models answer, with the fields vLLM and
// the simulator add.
type modelList struct {
	Data []modelEntry `json:"data"`
}

type modelEntry struct {
	simengine.ModelEntry
	MaxModelLen int `json:"max_model_len"` // vLLM adds it
}

// entry is the served model's entry. The simulator answers to any name,
// so a list of one entry stands for the model whatever its id.
func (ml modelList) entry(name string) (modelEntry, bool) {
	for _, m := range ml.Data {
		if m.ID == name {
			return m, true
		}
	}
	if len(ml.Data) == 1 {
		return ml.Data[0], true
	}
	return modelEntry{}, false
}

// listsModel checks that GET base/models lists name; with name empty, any
// answer will do. It returns the ids seen for the error message.
func (p *prober) listsModel(ctx context.Context, base, name string) (modelList, error) {
	var ml modelList
	if err := p.getJSON(ctx, base+"/models", &ml); err != nil {
		return ml, err
	}
	if name == "" {
		return ml, nil
	}
	var ids []string
	for _, m := range ml.Data {
		if m.ID == name {
			return ml, nil
		}
		ids = append(ids, m.ID)
	}
	return ml, fmt.Errorf("GET %s/models does not list %q (it lists: %s)", base, name, strings.Join(ids, ", "))
}

// snippet shortens a body for an error message.
func snippet(b []byte) string {
	s := strings.TrimSpace(string(b))
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

// get200 succeeds when url answers 200.
func (p *prober) get200(ctx context.Context, url string) error {
	code, body, err := p.get(ctx, url)
	if err != nil {
		return err
	}
	if code != http.StatusOK {
		return fmt.Errorf("GET %s: HTTP %d %s", url, code, snippet(body))
	}
	return nil
}
