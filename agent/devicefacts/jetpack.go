package devicefacts

import "strings"

// jetPackReleases maps an L4T (Jetson Linux) release to the JetPack that
// ships it. Source: NVIDIA's JetPack archive and Jetson Linux release notes
// (developer.nvidia.com/embedded/jetpack-archive, /embedded/jetson-linux-archive).
func jetPackReleases() map[string]string {
	return map[string]string{
		"38.2.0": "7.0",
		"36.4.4": "6.2.1",
		"36.4.3": "6.2",
		"36.4.0": "6.1",
		"36.3.0": "6.0",
		"36.2.0": "6.0 DP",
		"35.6.1": "5.1.5",
		"35.6.0": "5.1.4",
		"35.5.0": "5.1.3",
		"35.4.1": "5.1.2",
		"35.3.1": "5.1.1",
		"35.2.1": "5.1",
		"35.1.0": "5.0.2",
		"34.1.1": "5.0.1 DP",
		"34.1.0": "5.0 DP",
		"32.7.6": "4.6.6",
		"32.7.5": "4.6.5",
		"32.7.4": "4.6.4",
		"32.7.3": "4.6.3",
		"32.7.2": "4.6.2",
		"32.7.1": "4.6.1",
		"32.6.1": "4.6",
		"32.5.1": "4.5.1",
		"32.5.0": "4.5",
	}
}

// jetPackFamilies guesses for releases newer than the table: later 36.4.x
// patches have shipped as JetPack 6.2.x.
func jetPackFamilies() map[string]string {
	return map[string]string{
		"36.4": "6.2",
		"36.3": "6.0",
		"35.6": "5.1.4",
		"35.5": "5.1.3",
		"35.4": "5.1.2",
		"35.3": "5.1.1",
		"32.7": "4.6.x",
	}
}

// JetPackFor maps an L4T release ("36.4.3") to its JetPack ("6.2"); exact
// is false when the answer is a guess from the release family, "" when
// unknown.
func JetPackFor(l4t string) (jetpack string, exact bool) {
	if jp, ok := jetPackReleases()[l4t]; ok {
		return jp, true
	}
	parts := strings.SplitN(l4t, ".", 3)
	if len(parts) >= 2 {
		if jp, ok := jetPackFamilies()[parts[0]+"."+parts[1]]; ok {
			return jp, false
		}
	}
	return "", false
}
