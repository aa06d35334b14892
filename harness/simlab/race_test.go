//go:build race

package simlab_test

// raceDetector says the tests run under the race detector, which makes
// the simulator's and the client's handling of megabytes of pictures
// some ten times slower.
const raceDetector = true
