//go:build !race

package loadgen_test

const raceDetector = false
