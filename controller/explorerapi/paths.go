package explorerapi

// Paths of the explorer's API, as explorer.NewHandler serves them.
const (
	PathData = "/api/explorer/data"
	PathRows = "/api/explorer/rows"
	// PathCompare is the comparison of two runs (?a=RUN&b=RUN).
	PathCompare = "/api/explorer/compare"
	// PathProfiles is the latency and throughput tables, one row per line.
	PathProfiles = "/api/explorer/profiles"
)

// SchemaVersion is Dataset.Schema as written by this build.
const SchemaVersion = 1
