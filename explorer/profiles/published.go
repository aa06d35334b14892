// Package profiles holds latency and throughput profiles as vendors
// publish them (model → GPU → precision → TP; a Min Latency and a Max
// Throughput table): the published lines built into every controller,
// how a measured line finds the published one it reproduces, the
// filters of GET /api/explorer/profiles and the tables' text layout.
package profiles

import (
	"bytes"
	_ "embed"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/vlmfleet/vlmfleet/protocol"
)

// publishedCSV is NVIDIA's performance page for its vision-language NIMs
// (testdata/seed.txt), one table line per record, figures as printed.
//
//go:embed published.csv
var publishedCSV []byte

// What the page says of all its lines.
const (
	// PublishedNote is every published line's note.
	PublishedNote = "published (NVIDIA NIM, genai-perf)"
	// PublishedEngine served every published line.
	PublishedEngine = "NIM"
	// PublishedImageFormat is the format the page's genai-perf command
	// sends (--image-format png).
	PublishedImageFormat = protocol.ImageFormatPNG
)

// publishedColumns is published.csv's header, in order.
var publishedColumns = []string{"model", "gpu", "precision", "tp", "profile", "isl", "osl", "image",
	"ttft_ms", "itl_ms", "request_latency_ms", "request_throughput"}

// Published is the built-in published lines, in the page's order.
func Published() ([]protocol.ProfileRow, error) {
	return ParsePublished(publishedCSV)
}

// ParsePublished reads lines in published.csv's format. The page gives
// no GPU count: a line at TP n ran on n GPUs, which tensor parallelism
// over n needs. Its Min Latency lines are at concurrency 1, as the page
// says; its Max Throughput concurrency is not given (null).
func ParsePublished(data []byte) ([]protocol.ProfileRow, error) {
	r := csv.NewReader(bytes.NewReader(data))
	r.FieldsPerRecord = len(publishedColumns)
	header, err := r.Read()
	if err != nil {
		return nil, fmt.Errorf("published lines: header: %w", err)
	}
	if !slices.Equal(header, publishedColumns) {
		return nil, fmt.Errorf("published lines: header %q, want %q", header, publishedColumns)
	}
	var rows []protocol.ProfileRow
	for {
		rec, err := r.Read()
		if errors.Is(err, io.EOF) {
			return rows, nil
		}
		if err != nil {
			return nil, fmt.Errorf("published lines: %w", err)
		}
		line, _ := r.FieldPos(0)
		row, err := publishedRow(rec)
		if err != nil {
			return nil, fmt.Errorf("published lines: line %d: %w", line, err)
		}
		rows = append(rows, row)
	}
}

func publishedRow(rec []string) (protocol.ProfileRow, error) {
	row := protocol.ProfileRow{
		Model: rec[0], GPU: rec[1], Precision: rec[2], Profile: rec[4],
		Engine: PublishedEngine, ImageFormat: PublishedImageFormat,
		Source: protocol.ProfileSourcePublished, Note: PublishedNote,
	}
	var err error
	if row.TP, err = wholeNumber("tp", rec[3]); err != nil {
		return row, err
	}
	row.GPUCount = row.TP
	if rec[5] != "" {
		isl, err := wholeNumber("isl", rec[5])
		if err != nil {
			return row, err
		}
		row.ISL = &isl
	}
	if row.OSL, err = wholeNumber("osl", rec[6]); err != nil {
		return row, err
	}
	if row.Width, row.Height, err = ParseImageSize(rec[7]); err != nil {
		return row, fmt.Errorf("image: %w", err)
	}
	if row.Profile == protocol.ProfileMinLatency {
		one := 1
		row.Concurrency = &one
	}
	for i, dst := range []**float64{&row.TTFTMs, &row.ITLMs, &row.RequestLatencyMs, &row.RequestThroughput} {
		if *dst, err = figure(publishedColumns[8+i], rec[8+i]); err != nil {
			return row, err
		}
	}
	return row, row.Validate()
}

func wholeNumber(field, s string) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, fmt.Errorf("%s: %q, want a whole number", field, s)
	}
	return n, nil
}

// figure is a published figure, nil where the table leaves it out.
func figure(field, s string) (*float64, error) {
	if s == "" {
		return nil, nil
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return nil, fmt.Errorf("%s: %q, want a number or nothing", field, s)
	}
	return &v, nil
}

// ParseImageSize reads "WxH" in pixels, each side 1..MaxProfileImageSide.
func ParseImageSize(s string) (width, height int, err error) {
	w, h, ok := strings.Cut(s, "x")
	if ok {
		width, err = strconv.Atoi(w)
		if err == nil {
			height, err = strconv.Atoi(h)
		}
	}
	if !ok || err != nil {
		return 0, 0, fmt.Errorf("%.50q, want WIDTHxHEIGHT in pixels, e.g. 1120x1120", s)
	}
	if width < 1 || height < 1 || width > protocol.MaxProfileImageSide || height > protocol.MaxProfileImageSide {
		return 0, 0, fmt.Errorf("%s: each side 1..%d pixels", s, protocol.MaxProfileImageSide)
	}
	return width, height, nil
}
