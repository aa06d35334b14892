package protocol

import (
	"fmt"
	"strconv"
	"strings"
)

// The lists a person writes for a workload, as flags or query values:
// comma-separated sizes ("480p,720p") and counts ("1,2,4,8"). Errors say
// what was wrong and what is allowed; the caller names where it came from.

// ParseSizeList reads image sizes, each once, as the method spells them.
func ParseSizeList(v string) ([]string, error) {
	var out []string
	for _, s := range SplitList(v) {
		sz, err := LookupImageSize(s)
		if err != nil {
			return nil, err
		}
		for _, have := range out {
			if have == sz.Name {
				return nil, fmt.Errorf("%s is listed twice", sz.Name)
			}
		}
		out = append(out, sz.Name)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("at least one size is needed (480p, 720p, 1080p, 2K)")
	}
	return out, nil
}

// ParseIntList reads whole numbers in lo..hi, each once.
func ParseIntList(v string, lo, hi int) ([]int, error) {
	var out []int
	seen := map[int]bool{}
	for _, s := range SplitList(v) {
		n, err := strconv.Atoi(s)
		if err != nil || n < lo || n > hi {
			return nil, fmt.Errorf("%q is not a whole number in %d..%d", s, lo, hi)
		}
		if seen[n] {
			return nil, fmt.Errorf("%d is listed twice", n)
		}
		seen[n] = true
		out = append(out, n)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("at least one number is needed")
	}
	return out, nil
}

// SplitList splits a comma-separated list, dropping blanks.
func SplitList(v string) []string {
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// JoinInts writes counts as ParseIntList reads them.
func JoinInts(ns []int) string {
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ",")
}
