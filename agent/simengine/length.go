package simengine

// naturalAnswerTokens is how long the simulated answer is when nothing
// forces its length: the model's end of sequence. It is longer than the
// camera workload's answer (protocol.DefaultWorkload's 128 tokens), so the
// camera figures are what they were calibrated with, and shorter than
// every published profile's OSL (200 and up), so a client sees whether
// it held the OSL or not.
const naturalAnswerTokens = 160

// answerLength is how many tokens the answer has, as the engine the
// profile stands for decides it: max_tokens caps it; the natural answer
// ends at naturalAnswerTokens unless the engine's forced-length switches
// say otherwise. vLLM (and SGLang) suppress the end of sequence until
// min_tokens, and ignore it altogether with ignore_eos; llama.cpp's
// server knows ignore_eos only, and, like vLLM, ignores fields it does
// not know.
func (s *Server) answerLength(req parsedRequest) int {
	if req.ignoreEOS {
		return req.maxTokens
	}
	n := naturalAnswerTokens
	if s.p.Engine != EngineLlamaCpp {
		n = max(n, req.minTokens)
	}
	return min(n, req.maxTokens)
}

// finishReason is OpenAI's finish_reason for an answer of n tokens:
// "length" where max_tokens cut it, "stop" where it ended by itself.
func finishReason(req parsedRequest, n int) string {
	if n >= req.maxTokens {
		return "length"
	}
	return "stop"
}

// checkSwitches refuses what the engine refuses of the switches: vLLM
// answers 400 to a min_tokens above max_tokens (its SamplingParams check);
// llama.cpp does not know min_tokens.
func (s *Server) checkSwitches(req parsedRequest) error {
	if s.p.Engine != EngineLlamaCpp && req.minTokens > req.maxTokens {
		return badRequest("min_tokens must be less than or equal to max_tokens=%d, got %d.", req.maxTokens, req.minTokens)
	}
	return nil
}
