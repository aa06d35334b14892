package loadgen

import (
	"context"
	"fmt"
	"math"

	"github.com/vlmfleet/vlmfleet/protocol"
)

// calibration is how a length's text is sized against the server's own
// token count.
type calibration struct {
	// words is the text's words: the vocabulary's first words, as many.
	words int
	// imageTokens is what the images and the chat template add to the
	// prompt's tokens.
	imageTokens int
	// estimated: the server reports no usage, and a word counts as a token.
	estimated bool
}

// calibrationTries bounds the probes that adjust the words once the
// tokens per word are known.
const calibrationTries = 4

// calibrate sizes the text of lp at res without a tokenizer. A probe with
// the images and one word, and one with a quarter of ISL in words, read
// usage's prompt_tokens: their difference gives the server's tokens per
// word, and the first less its word the tokens of the images and the
// template. The words are then sized so that prompt tokens less those
// equal ISL within 1 %, checked, and adjusted, by a probe or more. Probes
// carry the level's pictures and texts of their own, and ask for one
// token.
func (p *profiler) calibrate(ctx context.Context, lp protocol.LengthPair, res protocol.Resolution) (calibration, error) {
	if p.w.ImagesPerRequest > 0 {
		// The first picture prepares the size, before anything is timed.
		if _, _, err := p.imgs.ProfilePicture(res, p.w.ImageFormat, 0, 0); err != nil {
			return calibration{}, fmt.Errorf("pictures: %w", err)
		}
	}
	if lp.ISL <= 0 {
		return calibration{}, nil
	}
	body, err := buildProfileBody(p.r.t, p.extra, 1, !p.w.NoStream, nil)
	if err != nil {
		return calibration{}, err
	}
	pr := &prober{lv: &profileLevel{p: p, lp: lp, res: res}, prefix: body.withoutSwitches, seed: randomSeed()}
	one, err := pr.promptTokens(ctx, 1)
	if err != nil || one <= 0 {
		return calibration{words: lp.ISL, estimated: err == nil}, err
	}
	if lp.ISL == 1 {
		return calibration{words: 1, imageTokens: one - 1}, nil
	}
	// A quarter of ISL words stays within ISL tokens (and the server's
	// context, which the engine was sized for) unless a word is more than
	// four tokens: a server past its context truncates the prompt and
	// counts what it kept.
	some := max(2, lp.ISL/probeShare)
	tokens, err := pr.promptTokens(ctx, some)
	if err != nil {
		return calibration{}, err
	}
	if tokens <= one {
		return calibration{}, fmt.Errorf("calibration: the server counted %d prompt tokens for %d words and %d for one: "+
			"its usage does not follow the text (a server truncates a prompt longer than its context)", tokens, some, one)
	}
	perWord := float64(tokens-one) / float64(some-1)
	cal := calibration{words: some, imageTokens: int(math.Round(float64(one) - perWord))}
	return pr.adjust(ctx, cal, lp.ISL, tokens-cal.imageTokens)
}

// probeShare is the share of ISL, in words, of the probe that learns the
// tokens per word.
const probeShare = 4

// prober sends a calibration's probes, one at a time.
type prober struct {
	lv     *profileLevel
	prefix string
	seed   uint64
	sent   int
}

// promptTokens sends a probe of words words and returns the prompt tokens
// the server counted (0: it reports no usage).
func (pr *prober) promptTokens(ctx context.Context, words int) (int, error) {
	r := pr.lv.p.r
	segs := pr.lv.segments(pr.prefix, words, pr.seed, pr.sent)
	pr.sent++
	var rec protocol.RequestRecord
	r.send(ctx, r.cameras(1)[0], segs, &rec)
	if rec.Error != "" {
		return 0, fmt.Errorf("calibration probe of %d words: %s", words, rec.Error)
	}
	return rec.PromptTokens, nil
}

// adjust resizes the words until the text's tokens (got, for cal.words)
// are within 1 % of isl, keeping the closest found when probes run out.
func (pr *prober) adjust(ctx context.Context, cal calibration, isl, got int) (calibration, error) {
	best, bestMiss := cal.words, abs(got-isl)
	for try := 0; try < calibrationTries && float64(abs(got-isl)) > 0.01*float64(isl); try++ {
		next := max(1, int(math.Round(float64(cal.words)*float64(isl)/float64(max(got, 1)))))
		if next == cal.words {
			next += sign(isl - got)
		}
		cal.words = next
		tokens, err := pr.promptTokens(ctx, cal.words)
		if err != nil {
			return cal, err
		}
		got = tokens - cal.imageTokens
		if miss := abs(got - isl); miss < bestMiss {
			best, bestMiss = cal.words, miss
		}
	}
	cal.words = best
	return cal, nil
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

func sign(x int) int {
	switch {
	case x > 0:
		return 1
	case x < 0:
		return -1
	}
	return 0
}
