// Package explorerapi is the explorer's HTTP API on the wire: the paths a
// controller serves under /api/explorer/ and the requests and answers they
// take and give (the dataset, the table's rows at a query, a comparison of
// two runs, the cost inputs).
//
// It stands beside controller/api and, like it, imports only protocol: a
// program that reads the explorer's answers (the API client, the CLI) links
// these types, not the explorer that computes them nor the page's static
// files it serves.
package explorerapi
