package profiles

import (
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/vlmfleet/vlmfleet/protocol"
)

// Filter is which lines GET /api/explorer/profiles answers; the zero
// Filter keeps them all.
type Filter struct {
	// Model and GPU keep lines whose name contains the text, in any case
	// ("90b", "h100").
	Model, GPU string
	// Precision keeps lines of that precision, in any case ("fp8").
	Precision string
	// TP keeps lines of that tensor-parallel size; 0 keeps all.
	TP int
	// Profile keeps one of the two tables.
	Profile string
	// Source keeps the published lines or the measured ones.
	Source string
}

// filterParams are the query parameters ParseFilter reads.
var filterParams = []string{"model", "gpu", "precision", "tp", "profile", "source"}

// FilterParamsText lists the parameters for errors and help.
const FilterParamsText = "model, gpu, precision (text), tp (the tensor-parallel size), profile (" +
	protocol.ProfileMinLatency + " or " + protocol.ProfileMaxThroughput + ") and source (" +
	protocol.ProfileSourcePublished + " or " + protocol.ProfileSourceMeasured + ")"

// ParseFilter reads the filters from query parameters. An unknown
// parameter, one given twice or an empty or malformed value is an error
// that names the parameter and what is allowed.
func ParseFilter(v url.Values) (Filter, error) {
	var f Filter
	for _, name := range slices.Sorted(maps.Keys(v)) {
		vals := v[name]
		if !slices.Contains(filterParams, name) {
			return f, fmt.Errorf("unknown parameter %.50q: the filters are %s", name, FilterParamsText)
		}
		if len(vals) != 1 {
			return f, fmt.Errorf("%s: given %d times, want once", name, len(vals))
		}
		if err := f.set(name, strings.TrimSpace(vals[0])); err != nil {
			return f, err
		}
	}
	return f, nil
}

func (f *Filter) set(name, val string) error {
	if val == "" {
		return fmt.Errorf("%s: empty; leave it out to keep every line", name)
	}
	switch name {
	case "tp":
		n, err := strconv.Atoi(val)
		if err != nil || n < 1 || n > protocol.MaxProfileGPUs {
			return fmt.Errorf("tp: %.50q, want a whole number 1..%d (the tensor-parallel size)", val, protocol.MaxProfileGPUs)
		}
		f.TP = n
		return nil
	case "profile":
		if val != protocol.ProfileMinLatency && val != protocol.ProfileMaxThroughput {
			return fmt.Errorf("profile: %.50q, want %s or %s", val, protocol.ProfileMinLatency, protocol.ProfileMaxThroughput)
		}
		f.Profile = val
		return nil
	case "source":
		if val != protocol.ProfileSourcePublished && val != protocol.ProfileSourceMeasured {
			return fmt.Errorf("source: %.50q, want %s or %s", val, protocol.ProfileSourcePublished, protocol.ProfileSourceMeasured)
		}
		f.Source = val
		return nil
	}
	if len(val) > protocol.MaxProfileName {
		return fmt.Errorf("%s: %d bytes, want at most %d", name, len(val), protocol.MaxProfileName)
	}
	switch name {
	case "model":
		f.Model = val
	case "gpu":
		f.GPU = val
	default:
		f.Precision = val
	}
	return nil
}

// Values is f as query parameters, the zero fields left out.
func (f Filter) Values() url.Values {
	v := url.Values{}
	for name, s := range map[string]string{"model": f.Model, "gpu": f.GPU, "precision": f.Precision, "profile": f.Profile, "source": f.Source} {
		if s != "" {
			v.Set(name, s)
		}
	}
	if f.TP > 0 {
		v.Set("tp", strconv.Itoa(f.TP))
	}
	return v
}

// Keep reports whether f keeps r.
func (f Filter) Keep(r protocol.ProfileRow) bool {
	return strings.Contains(fold(r.Model), fold(f.Model)) &&
		strings.Contains(fold(r.GPU), fold(f.GPU)) &&
		(f.Precision == "" || fold(r.Precision) == fold(f.Precision)) &&
		(f.TP == 0 || r.TP == f.TP) &&
		(f.Profile == "" || r.Profile == f.Profile) &&
		(f.Source == "" || r.Source == f.Source)
}

// Apply is the rows f keeps, in their order.
func (f Filter) Apply(rows []protocol.ProfileRow) []protocol.ProfileRow {
	out := []protocol.ProfileRow{}
	for _, r := range rows {
		if f.Keep(r) {
			out = append(out, r)
		}
	}
	return out
}
