//go:build !race

package simlab_test

const raceDetector = false
