package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/vlmfleet/vlmfleet/agent/engine/internal/fakeengine/persona"
)

// personaMain plays the program a kind's test described: its version
// commands, its command line, and its server.
func personaMain(p persona.Persona, args []string) int {
	switch {
	case len(p.VersionArgs) > 0 && slices.Equal(args, p.VersionArgs):
		fmt.Println(envOr("FAKE_VERSION", "0.0.1"))
		return 0
	case len(args) == 1 && args[0] == "--version":
		fmt.Println(p.ExecutableVersion)
		return 0
	}
	cfg, code, ok := parsePersona(p, args)
	if !ok {
		return code
	}
	fmt.Fprintf(os.Stderr, "%s: server_args=%v\n", p.Name, cfg.args)
	if code, ok := common(p.Name, cfg.port, p.OOM); !ok {
		return code
	}
	s := &personaServer{server: newServer(p.Name, p.OOM, p.Honours...), p: p, cfg: cfg}
	return s.listen(cfg.args["--host"], strconv.Itoa(cfg.port), s.routes())
}

// personaConfig is what the fake takes from the persona's command line.
type personaConfig struct {
	args          map[string]string // the options as given
	model, served string
	port          int
}

// parsePersona reads the command line as argparse does: the entry
// arguments first, then known options only. It returns false, with the
// usage on stderr, when the process must exit with code.
func parsePersona(p persona.Persona, args []string) (personaConfig, int, bool) {
	fail := func(msg string) (personaConfig, int, bool) {
		fmt.Fprintf(os.Stderr, "usage: %s [options]\n%s: error: %s\n", p.Name, p.Name, msg)
		return personaConfig{}, 2, false
	}
	if len(args) < len(p.Entry) || !slices.Equal(args[:len(p.Entry)], p.Entry) {
		return fail(fmt.Sprintf("the command line does not start with %q: %q", p.Entry, args))
	}
	vals, pos, bad, err := flagSpec(p.Flags).parse(args[len(p.Entry):], true)
	if err != nil {
		if err.Error() == "unknown" {
			return fail("unrecognized arguments: " + bad)
		}
		return fail(fmt.Sprintf("argument %s: %v", bad, err))
	}
	if len(pos) > 0 {
		return fail("unrecognized arguments: " + strings.Join(pos, " "))
	}
	cfg := personaConfig{args: vals, model: vals[p.ModelFlag]}
	if cfg.model == "" {
		return fail("the following arguments are required: " + p.ModelFlag)
	}
	cfg.served = vals[p.ServedFlag]
	if cfg.served == "" {
		cfg.served = cfg.model
	}
	port, err := strconv.Atoi(vals["--port"])
	if err != nil {
		return fail(fmt.Sprintf("argument --port: invalid int value: '%s'", vals["--port"]))
	}
	cfg.port = port
	return cfg, 0, true
}

// personaServer answers the persona's endpoints for one command line.
type personaServer struct {
	*server
	p   persona.Persona
	cfg personaConfig
}

func (s *personaServer) routes() *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+s.p.Health, func(w http.ResponseWriter, r *http.Request) {
		if !s.isReady() {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusOK)
	})
	if s.p.InfoPath != "" && os.Getenv("FAKE_NO_VERSION_API") != "1" {
		mux.HandleFunc("GET "+s.p.InfoPath, s.info)
	}
	mux.HandleFunc("GET /v1/models", s.models)
	mux.HandleFunc("POST /v1/chat/completions", s.chat)
	return mux
}

// info answers the options given by their names in snake case, with the
// version.
func (s *personaServer) info(w http.ResponseWriter, r *http.Request) {
	out := map[string]any{"version": envOr("FAKE_VERSION", "0.0.1")}
	for flag, v := range s.cfg.args {
		name := strings.ReplaceAll(strings.TrimLeft(flag, "-"), "-", "_")
		if takes := s.p.Flags[flag]; !takes {
			out[name] = true
			continue
		}
		if n, err := strconv.Atoi(v); err == nil {
			out[name] = n
		} else {
			out[name] = v
		}
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *personaServer) models(w http.ResponseWriter, r *http.Request) {
	if !authorized(w, r, s.cfg.args[s.p.APIKeyFlag]) {
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": []any{map[string]any{
		"id": s.cfg.served, "object": "model", "owned_by": s.p.OwnedBy, "root": s.cfg.served}}})
}

func (s *personaServer) chat(w http.ResponseWriter, r *http.Request) {
	if !authorized(w, r, s.cfg.args[s.p.APIKeyFlag]) {
		return
	}
	defer s.afterRequest()
	var req chatRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]any{"object": "error", "message": err.Error(), "code": 400})
		return
	}
	if req.Model != s.cfg.served {
		writeJSON(w, http.StatusNotFound, map[string]any{"object": "error", "message": fmt.Sprintf("The model '%s' does not exist", req.Model), "code": 404})
		return
	}
	streamAnswer(w, req, req.answerTokens(s.honours), s.cfg.served, 64+1200*len(req.images()), nil)
}
