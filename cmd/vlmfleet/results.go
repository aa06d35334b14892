package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/vlmfleet/vlmfleet/protocol"
)

// defaultControllerBase is where the CLI finds a controller unless told otherwise
// (--controller or VLMFLEET_CONTROLLER).
const defaultControllerBase = "http://127.0.0.1:8080"

// maxRunFileBytes bounds one file of result documents (an array may hold many).
const maxRunFileBytes = 64 * protocol.MaxMessageBytes

// maxImportRequestBytes is the controller's limit on one import request
// (controller/decode.go): checked here, before anything is sent.
const maxImportRequestBytes = 256 << 20

// cmdResults dispatches `vlmfleet results import`.
func cmdResults(ctx context.Context, c *cli, args []string) error {
	if len(args) == 0 {
		return usageError{errors.New("want a subcommand: import FILE...")}
	}
	switch args[0] {
	case "import":
		return resultsImport(ctx, c, args[1:])
	case "-h", "--help", "help":
		fmt.Fprintln(c.stdout, "Usage: vlmfleet results import FILE... [--controller URL] [--origin LABEL]")
		return nil
	}
	return usageError{fmt.Errorf("unknown subcommand %q: want import", args[0])}
}

// importedRun is one entry of POST /api/runs/import.
type importedRun struct {
	Origin string          `json:"origin"`
	Run    json.RawMessage `json:"run"`
}

type importRequest struct {
	Runs []importedRun `json:"runs"`
}

type importResponse struct {
	Imported int      `json:"imported"`
	IDs      []string `json:"ids"`
	Error    string   `json:"error"`
}

// resultsImport reads every file, checks every result document in them, and
// only when all are valid sends them to the controller in one request, so a
// bad file imports nothing.
func resultsImport(ctx context.Context, c *cli, args []string) error {
	fs := newFlagSet(c, "results import")
	controller := fs.String("controller", envOrDefault(c, "VLMFLEET_CONTROLLER", defaultControllerBase), "controller base URL (env VLMFLEET_CONTROLLER)")
	origin := fs.String("origin", "", "where the runs came from (default: each file's name)")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "Usage: vlmfleet results import FILE... [--controller URL] [--origin LABEL]\n\nLoads result documents (vlmfleet bench --json, or a JSON array of them) into a controller.\nEvery file is checked first; one bad file imports nothing.")
		fs.PrintDefaults()
	}
	files, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(files) == 0 {
		return usageError{errors.New("no files given: want one or more result documents")}
	}
	base, err := checkControllerBase(*controller)
	if err != nil {
		return err
	}
	var req importRequest
	for _, path := range files {
		raws, _, err := readRunFile(path)
		if err != nil {
			return err
		}
		o := *origin
		if o == "" {
			o = filepath.Base(path)
		}
		for _, raw := range raws {
			req.Runs = append(req.Runs, importedRun{Origin: o, Run: raw})
		}
	}
	resp, err := postImport(ctx, base, req)
	if err != nil {
		return err
	}
	fmt.Fprintf(c.stdout, "imported %d of %d runs into %s\n", resp.Imported, len(req.Runs), base)
	for i, id := range resp.IDs {
		from := ""
		if i < len(req.Runs) && len(resp.IDs) == len(req.Runs) {
			from = "  (" + req.Runs[i].Origin + ")"
		}
		fmt.Fprintf(c.stdout, "  %s%s\n", id, from)
	}
	return nil
}

func postImport(ctx context.Context, base string, body importRequest) (importResponse, error) {
	var out importResponse
	data, err := json.Marshal(body)
	if err == nil && len(data) > maxImportRequestBytes {
		return out, fmt.Errorf("the files come to %d MiB, over the controller's %d MiB for one import; import them in smaller groups",
			len(data)>>20, maxImportRequestBytes>>20)
	}
	if err != nil {
		return out, fmt.Errorf("encoding the import: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/api/runs/import", bytes.NewReader(data))
	if err != nil {
		return out, fmt.Errorf("import request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return out, fmt.Errorf("sending the runs to the controller: %w", err)
	}
	defer resp.Body.Close()
	reply, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return out, fmt.Errorf("reading the controller's answer: %w", err)
	}
	jsonErr := json.Unmarshal(reply, &out)
	if resp.StatusCode != http.StatusOK {
		msg := strings.TrimSpace(string(reply))
		if jsonErr == nil && out.Error != "" {
			msg = out.Error
		}
		return out, fmt.Errorf("the controller at %s refused the import (%s): %s", base, resp.Status, msg)
	}
	if jsonErr != nil {
		return out, fmt.Errorf("the controller's answer is not the import result: %w", jsonErr)
	}
	return out, nil
}

// readRunFile reads one file holding a result document, or a JSON array of
// them, and checks each with protocol.DecodeRun. Errors start with the file's
// name; for an array, with the element's index and the line it starts on.
func readRunFile(path string) ([]json.RawMessage, []protocol.Run, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxRunFileBytes+1))
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(data) > maxRunFileBytes {
		return nil, nil, fmt.Errorf("%s: more than %d bytes", path, maxRunFileBytes)
	}
	raws, runs, err := decodeRunFile(data)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	return raws, runs, nil
}

func decodeRunFile(data []byte) ([]json.RawMessage, []protocol.Run, error) {
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 {
		return nil, nil, errors.New("empty: want a result document or a JSON array of them")
	}
	if trimmed[0] != '[' {
		r, err := protocol.DecodeRun(data)
		if err != nil {
			return nil, nil, err
		}
		return []json.RawMessage{json.RawMessage(trimmed)}, []protocol.Run{*r}, nil
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if _, err := dec.Token(); err != nil {
		return nil, nil, fmt.Errorf("array of result documents: %w", err)
	}
	var raws []json.RawMessage
	var runs []protocol.Run
	for i := 0; dec.More(); i++ {
		start := dec.InputOffset()
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			line, col := jsonLineCol(data, dec.InputOffset())
			return nil, nil, fmt.Errorf("[%d]: line %d column %d: %w", i, line, col, err)
		}
		line, _ := jsonLineCol(data, start+int64(len(data[start:])-len(bytes.TrimLeft(data[start:], " \t\r\n,"))))
		r, err := protocol.DecodeRun(raw)
		if err != nil {
			return nil, nil, fmt.Errorf("[%d], starting on line %d: %w", i, line, err)
		}
		raws = append(raws, raw)
		runs = append(runs, *r)
	}
	if _, err := dec.Token(); err != nil {
		line, col := jsonLineCol(data, dec.InputOffset())
		return nil, nil, fmt.Errorf("line %d column %d: %w", line, col, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, nil, errors.New("trailing data after the array of result documents")
	}
	if len(runs) == 0 {
		return nil, nil, errors.New("the array holds no result documents")
	}
	return raws, runs, nil
}

// lineCol turns a byte offset into a 1-based line and column.
func jsonLineCol(data []byte, off int64) (int, int) {
	if off > int64(len(data)) {
		off = int64(len(data))
	}
	if off < 0 {
		off = 0
	}
	prefix := data[:off]
	return bytes.Count(prefix, []byte("\n")) + 1, int(off) - bytes.LastIndexByte(prefix, '\n')
}

// parseInterspersed parses flags that may come before, between or after the
// positional arguments ("import a.json --origin lab2 b.json"); "--" ends flags.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := parseFlags(fs, args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		if len(args) > len(rest) && args[len(args)-len(rest)-1] == "--" {
			return append(pos, rest...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// controllerURL checks a controller base URL: http or https with a host.
func checkControllerBase(s string) (string, error) {
	u, err := url.Parse(strings.TrimSpace(s))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", usageError{fmt.Errorf("--controller %q: want a base URL such as %s", s, defaultControllerBase)}
	}
	return strings.TrimRight(u.String(), "/"), nil
}

func envOrDefault(c *cli, name, def string) string {
	if c.getenv != nil {
		if v := c.getenv(name); v != "" {
			return v
		}
	}
	return def
}
