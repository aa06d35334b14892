package explorerapi

import "github.com/vlmfleet/vlmfleet/protocol"

// Comparison is run B set against run A of the same configuration.
type Comparison struct {
	Config protocol.Configuration `json:"config"`
	// Simulated: both runs were simulated.
	Simulated bool    `json:"simulated"`
	A         RunMeta `json:"a"`
	B         RunMeta `json:"b"`
	Rule      string  `json:"rule"`
	// Verdict is worse when any metric of any combination is worse, better
	// when some is better and none worse, else same (or not comparable when
	// nothing could be compared).
	Verdict string        `json:"verdict"`
	Worse   int           `json:"worse"`
	Better  int           `json:"better"`
	Combos  []ComboChange `json:"combinations"`
	// OnlyA and OnlyB are combinations measured in one run only.
	OnlyA []protocol.ComboKey `json:"only_a,omitempty"`
	OnlyB []protocol.ComboKey `json:"only_b,omitempty"`
	// Warnings: differences of workload that make the figures less comparable.
	Warnings []string `json:"warnings,omitempty"`
	// PowerA and PowerB are the power settings the runs were measured in
	// ("15W", "300 W limit"; runPower), empty when unknown. Runs of two
	// settings are shown side by side but judged neither worse nor better:
	// NotARegression says so, Verdict is "not comparable", and each
	// figure's verdict is empty.
	PowerA         string `json:"power_a,omitempty"`
	PowerB         string `json:"power_b,omitempty"`
	NotARegression string `json:"not_a_regression,omitempty"`
}

// ComboChange is one combination's change from A to B. Combinations are
// matched by their whole key, the frame interval and the load included: a
// paced level is never set against a back-to-back one, nor one round
// against cameras that keep sending (which wait longer by the method, not
// by a regression).
type ComboChange struct {
	protocol.ComboKey
	// SearchA and SearchB say that a search for the exact Max Cameras chose
	// the level in that run.
	SearchA bool           `json:"search_a,omitempty"`
	SearchB bool           `json:"search_b,omitempty"`
	Verdict string         `json:"verdict"`
	Metrics []MetricChange `json:"metrics"`
}

// MetricChange is one figure of a combination in A and in B.
type MetricChange struct {
	// Metric is the key ("ttft_p50", "ttft_p90", "e2e_p50", "tps_p50",
	// "success", and "dropped" on a frame clock); Label how people read it.
	Metric string `json:"metric"`
	Label  string `json:"label"`
	Unit   string `json:"unit"`
	// HigherIsBetter: TPS and success; times are better lower.
	HigherIsBetter bool    `json:"higher_is_better"`
	A              float64 `json:"a"`
	B              float64 `json:"b"`
	NA             int     `json:"n_a"`
	NB             int     `json:"n_b"`
	// Change is B−A; RelChange is Change/A (0 when A is 0).
	Change    float64 `json:"change"`
	RelChange float64 `json:"rel_change"`
	// P is the Mann-Whitney test's two-sided p of the two sets of values.
	P       float64 `json:"p"`
	Verdict string  `json:"verdict"`
}

// ConfigDiff is one part of the configuration in which two runs differ.
type ConfigDiff struct {
	Field string `json:"field"`
	A     string `json:"a"`
	B     string `json:"b"`
}
