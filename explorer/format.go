package explorer

import (
	"math"
	"strconv"
	"strings"
)

// Number formats of the seed's explanations: "4 s", "0.5 s", "18.39 s";
// "12 tok/s", "310.3 tok/s"; "2.4B", "8.0B", "26B".

// FormatSeconds writes seconds to 0.01 s with trailing zeros trimmed ("4", "0.5", "18.39").
func FormatSeconds(s float64) string { return trimmed(RoundSeconds(s), 2) }

// FormatTPS writes tokens per second to 0.1 with trailing zeros trimmed ("12", "310.3").
func FormatTPS(v float64) string { return trimmed(math.Round(v*10)/10, 1) }

// FormatParams writes a parameter count in billions as the seed does: one
// decimal below 10 ("2.4", "8.0": the decimal is kept, as published), whole
// billions from 10 up ("26", "13").
func FormatParams(b float64) string {
	if math.Round(b*10)/10 < 10 {
		return strconv.FormatFloat(b, 'f', 1, 64)
	}
	return strconv.FormatFloat(b, 'f', 0, 64)
}

func trimmed(v float64, decimals int) string {
	s := strconv.FormatFloat(v, 'f', decimals, 64)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(s, "0")
		s = strings.TrimSuffix(s, ".")
	}
	if s == "-0" {
		s = "0"
	}
	return s
}

func itoa(n int) string { return strconv.Itoa(n) }

// FormatInterval writes a frame interval as the page does (JavaScript's
// String of the number): "5", "0.5", "2.5".
func FormatInterval(s float64) string { return strconv.FormatFloat(s, 'g', -1, 64) }
