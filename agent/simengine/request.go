package simengine

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image"
	_ "image/jpeg" // the method's images are JPEG
	_ "image/png"  // a user's snapshots may be PNG
	"io"
	"strings"

	"github.com/vlmfleet/vlmfleet/protocol"
)

// chatRequest is the part of an OpenAI chat completion request the
// simulated engine reads.
type chatRequest struct {
	Model         string        `json:"model"`
	Messages      []chatMessage `json:"messages"`
	Stream        bool          `json:"stream"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	MaxTokens           *int `json:"max_tokens"`
	MaxCompletionTokens *int `json:"max_completion_tokens"`
	// The forced-length switches (answerLength says which engine obeys
	// which): vLLM's and SGLang's min_tokens, and ignore_eos.
	MinTokens *int  `json:"min_tokens"`
	IgnoreEOS *bool `json:"ignore_eos"`
}

// chatMessage decodes its content generically: one pass of the decoder over
// a body of several megabytes of base64 instead of one per nesting level, so
// that the simulator's own parsing stays far below the delays it models.
type chatMessage struct {
	Role    string `json:"role"`
	Content any    `json:"content"`
}

// parsedRequest is a validated request: what the model needs to time it.
type parsedRequest struct {
	model        string
	stream       bool
	includeUsage bool
	maxTokens    int
	minTokens    int
	ignoreEOS    bool
	textTokens   int
	images       []image.Point // pixel dimensions, in order
}

// requestError is a client mistake, answered with 400 (or code) and an
// OpenAI-style error body.
type requestError struct {
	code int
	msg  string
}

func (e *requestError) Error() string { return e.msg }

func badRequest(format string, args ...any) error {
	return &requestError{code: 400, msg: fmt.Sprintf(format, args...)}
}

// maxTokensLimit is the largest answer the simulated engines accept.
const maxTokensLimit = protocol.MaxTokensLimit

// parseRequest decodes and validates a chat completion body. Images are
// checked only as far as their headers: the pixel dimensions are all the
// timing model needs.
func parseRequest(body []byte) (parsedRequest, error) {
	return parseBody(cutBlobs(body))
}

// parseBody parses a body whose long data URLs cutBlobs took out into bl.
func parseBody(body []byte, bl blobs) (parsedRequest, error) {
	var req chatRequest
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&req); err != nil {
		return parsedRequest{}, badRequest("invalid JSON body: %v", err)
	}
	if len(req.Messages) == 0 {
		return parsedRequest{}, badRequest("messages: at least one message is required")
	}
	out := parsedRequest{model: bl.resolve(req.Model), stream: req.Stream, maxTokens: defaultMaxTokens}
	if req.StreamOptions != nil {
		out.includeUsage = req.StreamOptions.IncludeUsage
	}
	for _, mt := range []*int{req.MaxTokens, req.MaxCompletionTokens} {
		if mt == nil {
			continue
		}
		if *mt < 1 || *mt > maxTokensLimit {
			return parsedRequest{}, badRequest("max_tokens: %d, want 1..%d", *mt, maxTokensLimit)
		}
		out.maxTokens = *mt
	}
	if req.MinTokens != nil {
		if *req.MinTokens < 0 || *req.MinTokens > maxTokensLimit {
			return parsedRequest{}, badRequest("min_tokens: %d, want 0..%d", *req.MinTokens, maxTokensLimit)
		}
		out.minTokens = *req.MinTokens
	}
	out.ignoreEOS = req.IgnoreEOS != nil && *req.IgnoreEOS
	for i, m := range req.Messages {
		// The chat template adds a few tokens per message.
		out.textTokens += 4
		if err := out.addContent(i, m.Content, bl); err != nil {
			return parsedRequest{}, err
		}
	}
	return out, nil
}

func (r *parsedRequest) addContent(i int, content any, bl blobs) error {
	switch c := content.(type) {
	case nil:
		return nil
	case string:
		text, err := bl.text(c)
		if err != nil {
			return badRequest("messages[%d].content: %v", i, err)
		}
		r.textTokens += textTokens(text)
		return nil
	case []any:
		for k, raw := range c {
			p, ok := raw.(map[string]any)
			if !ok {
				return badRequest("messages[%d].content[%d]: want an object with a type", i, k)
			}
			switch p["type"] {
			case "text":
				text, _ := p["text"].(string)
				text, err := bl.text(text)
				if err != nil {
					return badRequest("messages[%d].content[%d].text: %v", i, k, err)
				}
				r.textTokens += textTokens(text)
			case "image_url":
				dim, err := imageDims(p["image_url"], bl)
				if err != nil {
					return badRequest("messages[%d].content[%d].image_url: %v", i, k, err)
				}
				r.images = append(r.images, dim)
			default:
				return badRequest("messages[%d].content[%d].type: %v, want text or image_url", i, k, p["type"])
			}
		}
		return nil
	}
	return badRequest("messages[%d].content: want a string or an array of parts", i)
}

// textTokens is the simulator's own count of a text's tokens: 1.3 per
// word, rounded up, about what a Llama or Qwen tokenizer makes of English
// prose. A client that sizes a text by the server's count (a profile's
// ISL) finds it linear in the words it sends.
func textTokens(s string) int { return (13*len(strings.Fields(s)) + 9) / 10 }

// imageDims reads the pixel size of a base64 data URL image from its header.
func imageDims(raw any, bl blobs) (image.Point, error) {
	var url string
	switch v := raw.(type) {
	case map[string]any:
		url, _ = v["url"].(string)
	case string:
		url = v
	default:
		return image.Point{}, fmt.Errorf("want {\"url\": \"data:image/...;base64,...\"}")
	}
	url = bl.resolve(url)
	if !strings.HasPrefix(url, "data:") {
		return image.Point{}, fmt.Errorf("only base64 data URLs are accepted (this engine cannot fetch %.40q)", url)
	}
	meta, data, ok := strings.Cut(url[len("data:"):], ",")
	if !ok {
		return image.Point{}, fmt.Errorf("data URL without a comma")
	}
	mime, enc, _ := strings.Cut(meta, ";")
	if !strings.HasPrefix(mime, "image/") {
		return image.Point{}, fmt.Errorf("data URL of type %q, want image/jpeg or image/png", mime)
	}
	if enc != "base64" {
		return image.Point{}, fmt.Errorf("data URL encoding %q, want base64", enc)
	}
	// Decoded as a stream: the header is all the model needs, and the rest
	// is only checked, so that sixteen cameras' 2K pictures are never held
	// decoded at once.
	dec := bufio.NewReader(base64.NewDecoder(base64.StdEncoding, strings.NewReader(data)))
	cfg, format, err := image.DecodeConfig(dec)
	if _, rerr := io.Copy(io.Discard, dec); rerr != nil {
		return image.Point{}, fmt.Errorf("bad base64: %v", rerr)
	}
	if err != nil {
		return image.Point{}, fmt.Errorf("not a JPEG or PNG image: %v", err)
	}
	if format != "jpeg" && format != "png" {
		return image.Point{}, fmt.Errorf("image format %s, want jpeg or png", format)
	}
	if cfg.Width < 1 || cfg.Height < 1 {
		return image.Point{}, fmt.Errorf("image of %d×%d pixels", cfg.Width, cfg.Height)
	}
	return image.Pt(cfg.Width, cfg.Height), nil
}

// imageTokens is what one image costs in prompt tokens for the profile.
func (p Profile) imageTokens(dim image.Point) int {
	if p.DC != nil {
		return modelImageTokens(p.Model, dim.X, dim.Y)
	}
	if p.FixedImageTokens > 0 {
		return p.FixedImageTokens
	}
	ppt := max(1, p.PixelsPerToken)
	return ((dim.X + ppt - 1) / ppt) * ((dim.Y + ppt - 1) / ppt)
}

// checkLimits refuses what the configuration was not measured with, the
// way the engine refuses it.
func (p Profile) checkLimits(r parsedRequest) error {
	if p.MaxImages > 0 && len(r.images) > p.MaxImages {
		return badRequest("At most %d image(s) may be provided in one request.", p.MaxImages)
	}
	if big, err := protocol.LookupImageSize(p.MaxSize); err == nil {
		for i, d := range r.images {
			if d.X*d.Y > big.Width*big.Height {
				return badRequest("image %d of %d×%d pixels exceeds this configuration's largest input (%s, %d×%d)",
					i, d.X, d.Y, big.Name, big.Width, big.Height)
			}
		}
	}
	return nil
}
