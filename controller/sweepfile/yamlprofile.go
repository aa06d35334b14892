package sweepfile

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/token"

	"github.com/vlmfleet/vlmfleet/controller/api"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// yamlProfile is a sweep file's workload.profile, written as a person
// writes it (docs/sweeps.md): ISL and OSL as two lists paired by
// position, image sizes as "WxH", concurrency a list or "auto", and
// extra_body a mapping. toProfile makes the protocol's ProfileWorkload of
// it, DefaultProfile's values where a field is left out.
type yamlProfile struct {
	ISL              []int            `json:"isl"`
	OSL              []int            `json:"osl"`
	ImageSize        []string         `json:"image_size"`
	ImageFormat      *string          `json:"image_format"`
	ImagesPerRequest *int             `json:"images_per_request"`
	Concurrency      *yamlConcurrency `json:"concurrency"`
	AutoCeiling      *int             `json:"auto_ceiling"`
	NoStream         bool             `json:"no_stream"`
	ExtraBody        map[string]any   `json:"extra_body"`
	RequestsPerLevel int              `json:"requests_per_level"`
	WarmupRequests   *int             `json:"warmup_requests"`
}

// yamlConcurrency is `concurrency: [1, 2, 4]` or `concurrency: auto`.
type yamlConcurrency struct {
	auto   bool
	levels []int
}

var yamlConcurrencyType = reflect.TypeOf(yamlConcurrency{})

// UnmarshalYAML reads what checkConcurrency let through.
func (c *yamlConcurrency) UnmarshalYAML(n ast.Node) error {
	if seq, ok := n.(*ast.SequenceNode); ok {
		c.levels = make([]int, len(seq.Values))
		for i, v := range seq.Values {
			l, err := strconv.Atoi(strings.TrimSpace(v.GetToken().Value))
			if err != nil {
				return fmt.Errorf("workload.profile.concurrency[%d]: %q, want a whole number", i, v.GetToken().Value)
			}
			c.levels[i] = l
		}
		return nil
	}
	c.auto = true
	return nil
}

// checkConcurrency is the shape walk of workload.profile.concurrency: a
// list of whole numbers, or the word auto.
func (c *shapeCheck) checkConcurrency(n ast.Node, path string) {
	if seq, ok := n.(*ast.SequenceNode); ok {
		for i, v := range seq.Values {
			c.node(v, reflect.TypeOf(0), fmt.Sprintf("%s[%d]", path, i))
		}
		return
	}
	if n.Type() == ast.StringType && strings.EqualFold(strings.TrimSpace(n.GetToken().Value), "auto") {
		return
	}
	c.wrongKind(n, path, "a list of levels or auto")
}

// profileNode is the value of workload.profile in a sweep file's body,
// and the key-value node that holds it; nil when there is none.
func profileNode(body ast.Node) *ast.MappingValueNode {
	if body == nil {
		return nil
	}
	top, _ := mappingValues(body)
	for _, mv := range top {
		if mv.Key.GetToken().Value != "workload" {
			continue
		}
		values, _ := mappingValues(mv.Value)
		for _, w := range values {
			if w.Key.GetToken().Value == "profile" && w.Value.Type() != ast.NullType {
				return w
			}
		}
	}
	return nil
}

// decodeProfileSweep decodes a sweep file whose workload has a profile:
// the workload starts as DefaultProfileWorkload (no camera ladders), the
// profile is decoded in its YAML form and made the protocol's, and the
// rest of the file is decoded around it.
func decodeProfileSweep(body ast.Node, profile *ast.MappingValueNode, opts []yaml.DecodeOption) (protocol.Sweep, *yamlProfile, *api.SweepInputError) {
	var yp yamlProfile
	if err := yaml.NodeToValue(profile.Value, &yp, opts...); err != nil {
		return protocol.Sweep{}, nil, decoderInput(err)
	}
	// The rest is decoded with the profile's value taken for null, which
	// leaves Profile nil; the one made of yp is set after.
	value := profile.Value
	profile.Value = ast.Null(token.New("null", "null", value.GetToken().Position))
	s := protocol.Sweep{Workload: protocol.DefaultProfileWorkload()}
	err := yaml.NodeToValue(body, &s, opts...)
	profile.Value = value
	if err != nil {
		return protocol.Sweep{}, nil, decoderInput(err)
	}
	p, in := yp.toProfile()
	if in != nil {
		return protocol.Sweep{}, nil, in
	}
	s.Workload.Profile = &p
	return s, &yp, nil
}

// toProfile is the protocol's profile of the YAML's: DefaultProfile with
// the fields written on top, ISL and OSL paired by position (a list of
// one stands for every item of the other). Its errors name the field as
// the YAML writes it; the ranges are Validate's.
func (yp yamlProfile) toProfile() (protocol.ProfileWorkload, *api.SweepInputError) {
	p := protocol.DefaultProfile()
	for _, l := range []struct {
		name    string
		written bool
	}{
		{"isl", yp.ISL != nil && len(yp.ISL) == 0},
		{"osl", yp.OSL != nil && len(yp.OSL) == 0},
		{"concurrency", yp.Concurrency != nil && !yp.Concurrency.auto && len(yp.Concurrency.levels) == 0},
	} {
		if l.written {
			field := "workload.profile." + l.name
			return p, &api.SweepInputError{Field: field, Err: fmt.Errorf("%s: an empty list; list at least one, or leave %s out for the default", field, l.name)}
		}
	}
	isl, osl := cmpOr(yp.ISL, []int{p.Lengths[0].ISL}), cmpOr(yp.OSL, []int{p.Lengths[0].OSL})
	n := max(len(isl), len(osl))
	if (len(isl) != n && len(isl) != 1) || (len(osl) != n && len(osl) != 1) {
		return p, &api.SweepInputError{Field: "workload.profile.osl", Err: fmt.Errorf(
			"workload.profile.osl: %d lengths, and isl %d: they pair by position, so write as many of each, or one osl for every isl (or one isl for every osl)",
			len(osl), len(isl))}
	}
	p.Lengths = make([]protocol.LengthPair, n)
	for i := range n {
		p.Lengths[i] = protocol.LengthPair{ISL: isl[min(i, len(isl)-1)], OSL: osl[min(i, len(osl)-1)]}
	}
	if yp.ImageSize != nil {
		p.Resolutions = make([]protocol.Resolution, len(yp.ImageSize))
		for i, s := range yp.ImageSize {
			r, err := protocol.ParseResolution(s)
			if err != nil {
				field := fmt.Sprintf("workload.profile.image_size[%d]", i)
				return p, &api.SweepInputError{Field: field, Err: fmt.Errorf("%s: %w", field, err)}
			}
			p.Resolutions[i] = r
		}
	}
	if yp.ImageFormat != nil {
		p.ImageFormat = strings.ToLower(*yp.ImageFormat)
	}
	p.ImagesPerRequest = deref(yp.ImagesPerRequest, p.ImagesPerRequest)
	p.WarmupRequests = deref(yp.WarmupRequests, p.WarmupRequests)
	p.NoStream, p.RequestsPerLevel = yp.NoStream, yp.RequestsPerLevel
	if c := yp.Concurrency; c != nil && !c.auto {
		// A list of levels has no ceiling; one written beside it is
		// refused by Validate rather than dropped here.
		p.Concurrency, p.AutoCeiling = c.levels, 0
	}
	p.AutoCeiling = deref(yp.AutoCeiling, p.AutoCeiling)
	if yp.ExtraBody != nil {
		body, err := json.Marshal(yp.ExtraBody)
		if err != nil {
			return p, &api.SweepInputError{Field: "workload.profile.extra_body", Err: fmt.Errorf(
				"workload.profile.extra_body: %v; want a mapping of names to values JSON can hold", err)}
		}
		p.ExtraBody = body
	}
	return p, nil
}

func cmpOr(a, b []int) []int {
	if len(a) > 0 {
		return a
	}
	return b
}

func deref(p *int, def int) int {
	if p == nil {
		return def
	}
	return *p
}

// yamlProfileField names a protocol field of the profile as the YAML
// writes it: workload.profile.lengths[1].osl is osl[1] (osl[0] when one
// OSL stands for all), resolutions[0] is image_size[0].
func yamlProfileField(field string, yp *yamlProfile) string {
	rest, ok := strings.CutPrefix(field, "workload.profile.")
	if !ok || yp == nil {
		return field
	}
	name, after, _ := strings.Cut(rest, "[")
	index, sub, _ := strings.Cut(after, "]")
	i, _ := strconv.Atoi(index)
	at := func(list string, n int) string {
		if n <= 1 {
			i = 0
		}
		return fmt.Sprintf("workload.profile.%s[%d]", list, i)
	}
	switch {
	case name == "resolutions" && index != "":
		return at("image_size", 2)
	case name == "resolutions":
		return "workload.profile.image_size"
	case name == "lengths" && sub == ".isl":
		return at("isl", len(yp.ISL))
	case name == "lengths" && sub == ".osl":
		return at("osl", len(yp.OSL))
	case name == "lengths" && index != "" && len(yp.ISL) > 1:
		return at("isl", len(yp.ISL))
	case name == "lengths" && index != "":
		return at("osl", len(yp.OSL))
	case name == "lengths":
		return "workload.profile.isl"
	}
	return field
}
