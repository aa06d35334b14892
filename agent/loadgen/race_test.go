//go:build race

package loadgen_test

// raceDetector says the tests run under the race detector, which makes
// decoding and sending megabytes of pictures some ten times slower.
const raceDetector = true
