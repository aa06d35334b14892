package measure

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"

	"github.com/rs/zerolog"

	"github.com/vlmfleet/vlmfleet/agent/devicefacts"
	"github.com/vlmfleet/vlmfleet/agent/engine"
	"github.com/vlmfleet/vlmfleet/agent/imageset"
	"github.com/vlmfleet/vlmfleet/agent/telemetry"
	"github.com/vlmfleet/vlmfleet/internal/loopback"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// Endpoint is a server someone else runs, measured as it is: what
// `vlmfleet bench` measures.
type Endpoint struct {
	// URL ends in /v1; Model is the name it serves.
	URL, Model, APIKey string
	// ImageDir holds the user's own pictures ("" for the built-in ones).
	ImageDir string
	// PictureCache keeps the built-in pictures once prepared
	// (imageset.BuiltinCached); "" draws them.
	PictureCache string
	// Telemetry is this machine's source; "" samples it (auto) when the
	// endpoint is on this machine and not otherwise, since this machine's
	// hardware says nothing of a remote endpoint's.
	Telemetry string
	// SysRoot and Path are where this machine's facts and tools are found.
	SysRoot, Path string
}

// Loopback reports whether the endpoint runs on this machine.
func (e Endpoint) Loopback() bool {
	u, err := url.Parse(e.URL)
	return err == nil && loopback.Host(u.Hostname())
}

// EndpointSpec is the measurement of e as a lab job would make it: the
// endpoint attached as an engine, the pictures, this machine's facts and
// telemetry. run carries the model and the workload; a run without an id
// gets a random one. The caller may name the device and engine after.
//
// It first checks that the endpoint answers and serves the model
// (engine.CheckEndpoint), and fails with the reason if not, before the
// pictures are prepared: a run of requests that all fail measures nothing.
func EndpointSpec(ctx context.Context, e Endpoint, run protocol.Run, log zerolog.Logger) (Spec, error) {
	ep := engine.Endpoint{BaseURL: e.URL, Model: e.Model, APIKey: e.APIKey}
	if err := engine.CheckEndpoint(ctx, ep); err != nil {
		return Spec{}, err
	}
	var imgs *imageset.Set
	var err error
	if e.ImageDir != "" {
		imgs, err = imageset.FromDir(e.ImageDir)
	} else {
		imgs, err = imageset.BuiltinCached(e.PictureCache)
	}
	if err != nil {
		return Spec{}, fmt.Errorf("loading the pictures: %w", err)
	}
	source := e.Telemetry
	if source == "" {
		source = telemetry.SourceOff
		if e.Loopback() {
			source = telemetry.SourceAuto
		}
	}
	if run.ID == "" {
		var b [8]byte
		_, _ = rand.Read(b[:])
		run.ID = hex.EncodeToString(b[:])
	}
	return Spec{
		Run:       run,
		Engine:    engine.Attach(ep, engine.Env{Log: log}),
		Images:    imgs,
		Device:    devicefacts.Detect(ctx, devicefacts.Options{SysRoot: e.SysRoot, Path: e.Path}),
		Telemetry: Telemetry{Source: source, SysRoot: e.SysRoot, Path: e.Path},
		Log:       log,
	}, nil
}
