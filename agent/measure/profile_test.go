package measure

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/vlmfleet/vlmfleet/agent/engine"
	"github.com/vlmfleet/vlmfleet/agent/telemetry"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// vllmProfileServer answers as vLLM would a profile: its model list says
// vllm, it counts a token a word and 50 an image, and it honours
// min_tokens.
func vllmProfileServer(t *testing.T, pngs *int) *httptest.Server {
	var mu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v1/models":
			_, _ = w.Write([]byte(`{"data":[{"id":"m","owned_by":"vllm"}]}`))
		case "/version":
			_, _ = w.Write([]byte(`{"version":"0.11.0"}`))
		case "/v1/chat/completions":
			var b struct {
				MaxTokens int  `json:"max_tokens"`
				MinTokens *int `json:"min_tokens"`
				Messages  []struct {
					Content []struct {
						Text     string `json:"text"`
						ImageURL struct {
							URL string `json:"url"`
						} `json:"image_url"`
					} `json:"content"`
				} `json:"messages"`
			}
			if err := json.NewDecoder(r.Body).Decode(&b); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			prompt := 7
			for _, c := range b.Messages[0].Content {
				prompt += len(strings.Fields(c.Text))
				if strings.HasPrefix(c.ImageURL.URL, "data:image/png;base64,") {
					prompt += 50
					mu.Lock()
					*pngs++
					mu.Unlock()
				}
			}
			out := min(b.MaxTokens, 2)
			if b.MinTokens != nil {
				out = b.MaxTokens
			}
			w.Header().Set("Content-Type", "text/event-stream")
			for i := 0; i < out; i++ {
				_, _ = w.Write([]byte("data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\n"))
			}
			fmt.Fprintf(w, "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":%d,\"completion_tokens\":%d}}\n\ndata: [DONE]\n\n", prompt, out)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// A run whose workload is a profile measures it: each level a
// combination with its profile figures, handed on with the max-throughput
// point marked, the length forced by vLLM's switches, and the run's
// configuration naming the GPU, their count and TP.
func TestProfileRunMeasuresTheProfileWithItsIdentity(t *testing.T) {
	var pngs int
	srv := vllmProfileServer(t, &pngs)
	w := tinyWorkload()
	w.Profile = &protocol.ProfileWorkload{
		Lengths:     []protocol.LengthPair{{ISL: 100, OSL: 4}},
		Resolutions: []protocol.Resolution{{Width: 64, Height: 48}},
		ImageFormat: protocol.ImageFormatPNG, ImagesPerRequest: 1,
		Concurrency: []int{1, 2}, RequestsPerLevel: 2,
	}
	h100 := protocol.GPUFacts{Name: "NVIDIA H100 80GB HBM3"}
	spec := Spec{
		Run:       protocol.Run{ID: "p1", Source: protocol.SourceBench, Workload: w, Config: protocol.Configuration{TP: 2}},
		Engine:    engine.Attach(engine.Endpoint{BaseURL: srv.URL + "/v1", Model: "m"}, engine.Env{}),
		Images:    pictures(t),
		Device:    protocol.DeviceFacts{Name: "DGX", GPUs: []protocol.GPUFacts{h100, h100}},
		Telemetry: Telemetry{Source: telemetry.SourceOff},
	}
	var kept []protocol.Combination
	run, err := Run(context.Background(), spec, Hooks{Combination: func(_ protocol.Run, c *protocol.Combination) error {
		kept = append(kept, *c)
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	if c := run.Config; c.GPU != h100.Name || c.GPUCount != 2 || c.TP != 2 {
		t.Errorf("configuration GPU %q × %d, TP %d; want %q × 2, TP 2", c.GPU, c.GPUCount, c.TP, h100.Name)
	}
	if len(run.Combinations) != 2 || len(kept) != 2 {
		t.Fatalf("%d combinations, %d handed on; want 2 and 2", len(run.Combinations), len(kept))
	}
	marked := 0
	for i, c := range kept {
		p := c.Profile
		if p == nil {
			t.Fatalf("combination %s has no profile", c.ComboKey)
		}
		if c.ISL != 100 || c.OSL != 4 || c.Cameras != []int{1, 2}[i] || c.Size != "64x48" {
			t.Errorf("combination %s", c.ComboKey)
		}
		if !p.OSLHeld || !slices.Equal(p.ForcedBy, []string{"ignore_eos", "min_tokens"}) || p.ImageTokens < 56 || p.ImageTokens > 58 {
			t.Errorf("%s: OSL held %v, forced by %v, image tokens %d", c.ComboKey, p.OSLHeld, p.ForcedBy, p.ImageTokens)
		}
		if p.MaxThroughput {
			marked++
		}
	}
	if marked != 1 || pngs == 0 {
		t.Errorf("%d levels marked max throughput, %d PNG pictures sent; want 1 and some", marked, pngs)
	}
}

// A simulated data-center host is filed under the GPU as the published
// tables spell it, not as its simulated nvidia-smi does, and a line counts
// the GPUs the model was split over, not the host's.
func TestProfileIdentityOfASimulatedHost(t *testing.T) {
	r := protocol.Run{Simulated: true, Config: protocol.Configuration{TP: 2},
		Device: protocol.DeviceFacts{Name: "H100-HBM3-80GB", GPUs: make([]protocol.GPUFacts, 8)}}
	r.Device.GPUs[0].Name = "NVIDIA H100 80GB HBM3"
	profileIdentity(&r)
	if c := r.Config; c.GPU != "H100-HBM3-80GB" || c.GPUCount != 2 || c.TP != 2 {
		t.Errorf("configuration GPU %q × %d, TP %d; want H100-HBM3-80GB × 2, TP 2", c.GPU, c.GPUCount, c.TP)
	}
}
