package web

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"strings"
)

// Export writes one self-contained HTML file: the page, its stylesheet, the
// chart library, the page's modules bundled into one inline module, and
// dataset (the explorer Dataset JSON) inline. It needs no server and no
// network, so it opens from file:// and can be published as it is.
func Export(w io.Writer, dataset []byte) error {
	data, err := inlineJSON(dataset)
	if err != nil {
		return fmt.Errorf("export explorer: %w", err)
	}
	assets, err := loadAssets()
	if err != nil {
		return fmt.Errorf("export explorer: %w", err)
	}
	bundle, err := bundleModules(assets)
	if err != nil {
		return fmt.Errorf("export explorer: %w", err)
	}
	css := string(assets["style.css"].body)
	lib := string(assets[chartLibPath].body)
	for name, text := range map[string]string{"style.css": css, chartLibPath: lib, "the bundled modules": bundle} {
		if err := inlineSafe(text); err != nil {
			return fmt.Errorf("export explorer: %s: %w", name, err)
		}
	}
	head := "<style>\n" + css + "\n</style>\n<script>\n" + lib + "\n</script>"
	scripts := `<script type="application/json" id="vlmfleet-data">` + data + "</script>\n<script type=\"module\">\n" + bundle + "\n</script>"
	page, err := fillMarkers(string(assets["index.html"].body), head, scripts)
	if err != nil {
		return fmt.Errorf("export explorer: %w", err)
	}
	if _, err := io.WriteString(w, page); err != nil {
		return fmt.Errorf("export explorer: write: %w", err)
	}
	return nil
}

// inlineJSON checks that dataset is a JSON object and makes it safe inside a
// <script> element: "<" can only occur inside JSON strings, where \u003c
// means the same, so no "</script>" or "<!--" can end the element early.
func inlineJSON(dataset []byte) (string, error) {
	trimmed := bytes.TrimSpace(dataset)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return "", fmt.Errorf("dataset must be a JSON object (the explorer Dataset)")
	}
	var probe struct {
		Rows []json.RawMessage `json:"rows"`
	}
	if err := json.Unmarshal(trimmed, &probe); err != nil {
		return "", fmt.Errorf("dataset is not a valid explorer Dataset: %w", err)
	}
	return string(bytes.ReplaceAll(trimmed, []byte("<"), []byte(`\u003c`))), nil
}

// inlineSafe rejects text that would end or confuse an inline <script> or
// <style> element.
func inlineSafe(text string) error {
	low := strings.ToLower(text)
	for _, bad := range []string{"</script", "<!--", "<script", "</style"} {
		if i := strings.Index(low, bad); i >= 0 {
			return fmt.Errorf("contains %q at byte %d, which cannot be inlined", bad, i)
		}
	}
	return nil
}

var (
	importLine = regexp.MustCompile(`^import \{[A-Za-z0-9_$,\s]*\} from '\./([a-z]+\.js)';$`)
	exportDecl = regexp.MustCompile(`^export (const|let|function|async function|class) `)
	// topLevelDecl names what a line at the start of a module declares.
	topLevelDecl = regexp.MustCompile(`^(?:export )?(?:const|let|function|async function|class) ([A-Za-z0-9_$]+)`)
)

// bundleModules concatenates the page's modules into one module body: the
// import lines go (each module comes after those it imports) and "export "
// is dropped from declarations. The modules keep to that form, with unique
// top-level names; anything else is an error rather than a broken page.
func bundleModules(assets map[string]asset) (string, error) {
	var out strings.Builder
	done := map[string]bool{}
	declared := map[string]string{} // top-level name -> the module declaring it
	for _, name := range moduleOrder() {
		sc := bufio.NewScanner(bytes.NewReader(assets[name].body))
		sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
		fmt.Fprintf(&out, "// ---- %s\n", name)
		for n := 1; sc.Scan(); n++ {
			line := sc.Text()
			if m := importLine.FindStringSubmatch(line); m != nil {
				if !done[m[1]] {
					return "", fmt.Errorf("bundle: %s line %d imports %s, which is not bundled before it", name, n, m[1])
				}
				continue
			}
			if m := topLevelDecl.FindStringSubmatch(line); m != nil {
				if other, dup := declared[m[1]]; dup {
					return "", fmt.Errorf("bundle: %s line %d declares %s, which %s declares too: top-level names must differ across the modules", name, n, m[1], other)
				}
				declared[m[1]] = name
			}
			if exportDecl.MatchString(line) {
				line = strings.TrimPrefix(line, "export ")
			} else if strings.HasPrefix(line, "import ") || strings.HasPrefix(line, "export ") {
				return "", fmt.Errorf("bundle: %s line %d: only `import { a, b } from './x.js';` and `export <declaration>` can be bundled: %q", name, n, line)
			}
			out.WriteString(line)
			out.WriteByte('\n')
		}
		if err := sc.Err(); err != nil {
			return "", fmt.Errorf("bundle: read %s: %w", name, err)
		}
		done[name] = true
	}
	return out.String(), nil
}
