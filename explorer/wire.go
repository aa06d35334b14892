package explorer

import "github.com/vlmfleet/vlmfleet/controller/explorerapi"

// The explorer's answers are defined in controller/explorerapi, so that a
// program reading them (the API client) does not link the explorer and its
// page. The explorer computes them everywhere, so it keeps their names as
// its own.

type (
	Dataset        = explorerapi.Dataset
	RowConfig      = explorerapi.RowConfig
	Row            = explorerapi.Row
	RunMeta        = explorerapi.RunMeta
	Point          = explorerapi.Point
	Regression     = explorerapi.Regression
	Query          = explorerapi.Query
	RowView        = explorerapi.RowView
	RowsResponse   = explorerapi.RowsResponse
	Cost           = explorerapi.Cost
	CostInputError = explorerapi.CostInputError
	Comparison     = explorerapi.Comparison
	ComboChange    = explorerapi.ComboChange
	MetricChange   = explorerapi.MetricChange
	ConfigDiff     = explorerapi.ConfigDiff
)

const (
	PathData      = explorerapi.PathData
	PathRows      = explorerapi.PathRows
	PathCompare   = explorerapi.PathCompare
	PathProfiles  = explorerapi.PathProfiles
	SchemaVersion = explorerapi.SchemaVersion
	MaxTargetSec  = explorerapi.MaxTargetSec

	MaxCurrencyChars = explorerapi.MaxCurrencyChars
	MaxCostPrice     = explorerapi.MaxCostPrice
	MinCostMonths    = explorerapi.MinCostMonths
	MaxCostMonths    = explorerapi.MaxCostMonths
	MaxCostKWh       = explorerapi.MaxCostKWh
)
