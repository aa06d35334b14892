package web

import (
	"path"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
)

var staticImport = regexp.MustCompile(`(?m)^import \{[^}]*\} from '\./([^']+)';$`)

// moduleImports lists the modules name imports, as the bundler reads them.
func moduleImports(t *testing.T, assets map[string]asset, name string) []string {
	t.Helper()
	a, ok := assets[name]
	if !ok {
		t.Fatalf("static/%s is imported but missing", name)
	}
	var out []string
	for _, m := range staticImport.FindAllStringSubmatch(string(a.body), -1) {
		out = append(out, m[1])
	}
	return out
}

// reached lists every module root reaches through its imports, root
// included.
func reached(t *testing.T, assets map[string]asset, root string) map[string]bool {
	seen := map[string]bool{}
	var walk func(string)
	walk = func(name string) {
		if seen[name] {
			return
		}
		seen[name] = true
		for _, dep := range moduleImports(t, assets, name) {
			walk(dep)
		}
	}
	walk(root)
	return seen
}

// The exported file bundles the modules moduleOrder names: a module app.js
// reaches that it leaves out would break the exported page, one it names
// that nothing imports would be dead weight; and each module must come after
// those it imports.
func TestModuleOrderIsWhatAppImports(t *testing.T) {
	assets, err := loadAssets()
	if err != nil {
		t.Fatal(err)
	}
	want := reached(t, assets, "app.js")
	order := moduleOrder()
	for i, name := range order {
		if !want[name] {
			t.Errorf("moduleOrder names %s, which app.js does not reach", name)
		}
		for _, dep := range moduleImports(t, assets, name) {
			if !slices.Contains(order[:i], dep) {
				t.Errorf("moduleOrder puts %s before %s, which it imports", name, dep)
			}
		}
	}
	for name := range want {
		if !slices.Contains(order, name) {
			t.Errorf("app.js reaches %s, which moduleOrder leaves out", name)
		}
	}
}

// Every script under static/ is a page's script or a module one of them
// imports: a file nothing loads is served for nothing.
func TestEveryScriptIsLoaded(t *testing.T) {
	assets, err := loadAssets()
	if err != nil {
		t.Fatal(err)
	}
	loaded := map[string]bool{}
	for _, page := range []string{"app.js", "compare.js", "profiles.js"} {
		for name := range reached(t, assets, page) {
			loaded[name] = true
		}
	}
	var unloaded []string
	for name := range assets {
		if path.Ext(name) == ".js" && !strings.HasPrefix(name, "vendor/") && !loaded[name] {
			unloaded = append(unloaded, name)
		}
	}
	sort.Strings(unloaded)
	if len(unloaded) > 0 {
		t.Errorf("no page loads %v", unloaded)
	}
}

// Bundled into one module, two modules' top-level names share one scope: a
// name declared twice would make the exported page a syntax error, so the
// bundle is refused instead, naming both modules.
func TestBundleRefusesADuplicateTopLevelName(t *testing.T) {
	assets, err := loadAssets()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bundleModules(assets); err != nil {
		t.Fatalf("the page's own modules: %v", err)
	}
	dom := assets["dom.js"]
	assets["dom.js"] = newAsset("dom.js", append(append([]byte{}, dom.body...), "\nfunction selection() {}\n"...))
	_, err = bundleModules(assets)
	if err == nil || !strings.Contains(err.Error(), "state.js") || !strings.Contains(err.Error(), "dom.js") {
		t.Errorf("a name declared in dom.js and state.js: %v, want an error naming both", err)
	}
}
