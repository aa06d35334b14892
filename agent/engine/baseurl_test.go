package engine

import "testing"

// A URL copied with its API path names the API at its base, /v1 kept.
func TestBaseURLCutsTheAPIPath(t *testing.T) {
	for raw, want := range map[string]string{
		"http://h:8000/v1/chat/completions":  "http://h:8000/v1",
		"http://h:8000/v1/chat/completions/": "http://h:8000/v1",
		"http://h:8000/v1/models":            "http://h:8000/v1",
		"http://h:8000/v1/":                  "http://h:8000/v1",
		"http://h:8000/openai/v1":            "http://h:8000/openai/v1",
	} {
		if got, _ := BaseURL(raw); got != want {
			t.Errorf("BaseURL(%q) = %q, want %q", raw, got, want)
		}
	}
	for base, want := range map[string]string{
		"http://h:8000":                     "http://h:8000/v1",
		"http://h:8000/chat/completions":    "http://h:8000/v1",
		"http://h:8000/v1/chat/completions": "http://h:8000/v1",
		"http://h:8000/v1/extra":            "http://h:8000/v1",
	} {
		if got := SuggestBaseURL(base); got != want {
			t.Errorf("SuggestBaseURL(%q) = %q, want %q", base, got, want)
		}
	}
}
