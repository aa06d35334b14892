package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
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

// CheckEndpoint makes sure that an endpoint someone else runs can be
// measured before anything is: that it answers, at a URL that ends where
// the OpenAI API begins, and that it serves the model. Without it a
// mistyped URL or model made a whole run of failed requests that read
// "Max Cameras 0". A model the list does not name is tried with a one-token
// request, since servers answer to names they do not list (Ollama's
// "name" for "name:latest", llama-server's any name).
func CheckEndpoint(ctx context.Context, ep Endpoint) error {
	base := strings.TrimRight(ep.BaseURL, "/")
	p := newProber(ep.APIKey, attachProbeTimeout)
	code, body, err := p.get(ctx, base+"/models")
	if err != nil {
		return fmt.Errorf("%s does not answer: %w", base, innerError(err))
	}
	if code == http.StatusUnauthorized || code == http.StatusForbidden {
		return fmt.Errorf("%s refused the API key (HTTP %d on GET /models): set --api-key or $VLMFLEET_API_KEY", base, code)
	}
	var ml modelList
	if code == http.StatusOK && json.Unmarshal(body, &ml) == nil && len(ml.Data) > 0 {
		// A server that lists its models is held to its list: one that
		// answers to any name (llama-server) would have the run filed
		// under a name that is not the model's.
		if _, ok := ml.named(ep.Model); ok {
			return nil
		}
		return fmt.Errorf("model %q: GET %s/models does not list it; it serves %s (the run is filed under the model it names; a display name is --model-name)",
			ep.Model, base, strings.Join(quoted(ml.ids()), ", "))
	}
	code, msg, err := p.tryModel(ctx, base, ep.Model)
	switch {
	case err != nil:
		return fmt.Errorf("%s does not answer a chat request: %w", base, innerError(err))
	case code == http.StatusOK:
		return nil
	case code == http.StatusNotFound && !strings.HasSuffix(base, "/v1"):
		return fmt.Errorf("%s/chat/completions: HTTP 404 (%s): the URL should end in /v1, e.g. %s", base, msg, SuggestBaseURL(base))
	case code == http.StatusNotFound:
		return fmt.Errorf("model %q: HTTP 404 from %s/chat/completions (%s)", ep.Model, base, msg)
	}
	return fmt.Errorf("%s/chat/completions answered a one-token request for model %q with HTTP %d: %s", base, ep.Model, code, msg)
}

// apiPaths are the OpenAI API's paths under its base URL that a URL copied
// from a server's documentation or log often ends in.
var apiPaths = []string{"/chat/completions", "/completions", "/models", "/embeddings"}

// BaseURL is the base URL of the OpenAI API that raw names: raw itself, or
// raw without an API path it ends in ("…/v1/chat/completions" is
// "…/v1"), with no trailing slash. trimmed says an API path was cut.
func BaseURL(raw string) (base string, trimmed bool) {
	base = strings.TrimRight(raw, "/")
	for _, p := range apiPaths {
		if cut, ok := strings.CutSuffix(base, p); ok {
			return cut, true
		}
	}
	return base, false
}

// SuggestBaseURL is the base URL to try for one that the server does not
// answer at: up to and including its /v1 when it has one, else with /v1
// added.
func SuggestBaseURL(base string) string {
	base, _ = BaseURL(base)
	if i := strings.Index(base+"/", "/v1/"); i >= 0 {
		return base[:i+len("/v1")]
	}
	return base + "/v1"
}

func quoted(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = fmt.Sprintf("%q", s)
	}
	return out
}

// named is the entry listed under name: its id, or Ollama's name:latest.
func (ml modelList) named(name string) (modelEntry, bool) {
	for _, m := range ml.Data {
		if m.ID == name || m.ID == name+":latest" {
			return m, true
		}
	}
	return modelEntry{}, false
}

func (ml modelList) ids() []string {
	ids := make([]string, 0, len(ml.Data))
	for _, m := range ml.Data {
		ids = append(ids, m.ID)
	}
	return ids
}

// tryModel sends the smallest chat request there is, one token of a text
// prompt, and returns its status and, unless 200, the server's words.
func (p *prober) tryModel(ctx context.Context, base, model string) (int, string, error) {
	body, err := json.Marshal(map[string]any{
		"model":      model,
		"messages":   []any{map[string]any{"role": "user", "content": []any{map[string]string{"type": "text", "text": "Say OK."}}}},
		"max_tokens": 1,
		"stream":     true,
	})
	if err != nil {
		return 0, "", err
	}
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/chat/completions", bytes.NewReader(body))
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("Content-Type", "application/json")
	if p.apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+p.apiKey)
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return 0, "", err
	}
	// The answer itself does not matter, only that there is one: the body
	// is closed unread.
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusOK {
		return resp.StatusCode, "", nil
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	return resp.StatusCode, serverMessage(b), nil
}

// serverMessage is an error body's message (OpenAI's {"error":{"message"}},
// Ollama's {"error":"..."}, FastAPI's {"detail":"..."} from vLLM), or the
// body shortened.
func serverMessage(b []byte) string {
	var e struct {
		Error  json.RawMessage `json:"error"`
		Detail string          `json:"detail"`
	}
	if json.Unmarshal(b, &e) == nil && e.Detail != "" && len(e.Error) == 0 {
		return e.Detail
	}
	if json.Unmarshal(b, &e) == nil && len(e.Error) > 0 {
		var s string
		if json.Unmarshal(e.Error, &s) == nil && s != "" {
			return s
		}
		var o struct {
			Message string `json:"message"`
		}
		if json.Unmarshal(e.Error, &o) == nil && o.Message != "" {
			return o.Message
		}
	}
	return snippet(b)
}

// innerError drops the URL that net/http wraps around a transport error:
// the caller names the endpoint already.
func innerError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}
