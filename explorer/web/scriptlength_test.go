package web

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// maxScriptFunctionLines is the longest a function in the pages' scripts may
// be, counted as Go functions are: from the line its head starts on to the
// line of its closing brace, both included.
const maxScriptFunctionLines = 80

// The page's scripts keep to the rule the Go code keeps to: no function over
// 80 lines. The vendored library is not ours and is left out.
func TestNoScriptFunctionIsLongerThan80Lines(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("static", "*.js"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no scripts under static/: %v", err)
	}
	for _, file := range files {
		src, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		fns, err := scriptFunctions(string(src))
		if err != nil {
			t.Errorf("%s: %v", file, err)
			continue
		}
		for _, fn := range fns {
			if fn.lines() > maxScriptFunctionLines {
				t.Errorf("%s:%d: %s is %d lines, over %d: split it", file, fn.start, fn.name, fn.lines(), maxScriptFunctionLines)
			}
		}
	}
}

// The scan must find each kind of function the scripts use, and must not be
// misled by braces in strings, templates, regular expressions and comments.
func TestScriptFunctionsFindsEachKind(t *testing.T) {
	src := `// a { in a comment
function decl(a, opts = {}) {
  const re = /[{'"]/g; /* } */
  return ` + "`${a} {`" + `;
}
const arrow = (x) => {
  const s = '}';
  return x.map((v) => v + 1);
};
const expr = (v) => (v > 0
  ? 'yes'
  : 'no');
const obj = {
  method(chart) {
    return chart;
  },
  key: async () => {
    await 1;
  },
};
list.forEach(async function named() {
  return ` + "`${(() => { return 1; })()}`" + `;
});
const one = v => v * 2;
`
	got, err := scriptFunctions(src)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"decl 2-5", "arrow 6-9", "(anonymous arrow) 8-8", "expr 10-12", "method 14-16", "key 17-19",
		"named 21-23", "(anonymous arrow) 22-22", "one 24-24"}
	var have []string
	for _, fn := range got {
		have = append(have, fmt.Sprintf("%s %d-%d", fn.name, fn.start, fn.end))
	}
	if strings.Join(have, ", ") != strings.Join(want, ", ") {
		t.Errorf("found\n  %s\nwant\n  %s", strings.Join(have, ", "), strings.Join(want, ", "))
	}
	if _, err := scriptFunctions("function f() {\n  return 1;\n"); err == nil {
		t.Error("an unclosed body was accepted")
	}
}

// scriptFunction is one function the scan found: its name (or a stand-in)
// and the lines it spans.
type scriptFunction struct {
	name       string
	start, end int
}

func (f scriptFunction) lines() int { return f.end - f.start + 1 }

// jsToken is a token of a script: an identifier or number (word), one
// punctuation character, or a literal (string, template text or regular
// expression) whose content no longer matters.
type jsToken struct {
	kind byte // 'w' word, 'p' punctuation, 'l' literal
	text string
	line int
}

// scriptFunctions lists the functions in src: `function` declarations and
// expressions, arrows with a block or an expression body, and shorthand
// methods in object literals and classes.
//
// It is a scan of tokens, not a parser, and leans on the scripts' style:
// semicolons end statements (an arrow's expression body ends at a comma,
// a semicolon or a closing bracket, not at a line break); a slash starts a
// regular expression unless it follows a word, a number or a closing
// bracket (so `return /x/` would be read as a division - write the regular
// expression elsewhere); and getters, setters and computed method names
// are not recognised. Everything inside a function counts, nested
// functions included, as Go's rule counts closures.
func scriptFunctions(src string) ([]scriptFunction, error) {
	toks, err := jsTokens(src)
	if err != nil {
		return nil, err
	}
	var out []scriptFunction
	for i, tk := range toks {
		var fn scriptFunction
		var ok bool
		switch {
		case tk.kind == 'w' && tk.text == "function":
			fn, ok, err = functionAt(toks, i)
		case tk.kind == 'p' && tk.text == "=>":
			fn, ok, err = arrowAt(toks, i)
		case tk.kind == 'w' && i+1 < len(toks) && toks[i+1].text == "(":
			fn, ok, err = methodAt(toks, i)
		}
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", tk.line, err)
		}
		if ok {
			out = append(out, fn)
		}
	}
	return out, nil
}

// functionAt reads the function whose `function` keyword is toks[i].
func functionAt(toks []jsToken, i int) (scriptFunction, bool, error) {
	name := "(anonymous function)"
	j := i + 1
	if j < len(toks) && toks[j].text == "*" {
		j++
	}
	if j < len(toks) && toks[j].kind == 'w' {
		name = toks[j].text
		j++
	}
	if j >= len(toks) || toks[j].text != "(" {
		return scriptFunction{}, false, fmt.Errorf("function %s: no parameter list", name)
	}
	close, err := matching(toks, j)
	if err != nil {
		return scriptFunction{}, false, err
	}
	if close+1 >= len(toks) || toks[close+1].text != "{" {
		return scriptFunction{}, false, fmt.Errorf("function %s: no body", name)
	}
	end, err := matching(toks, close+1)
	if err != nil {
		return scriptFunction{}, false, err
	}
	return scriptFunction{name: name, start: toks[i].line, end: toks[end].line}, true, nil
}

// arrowAt reads the arrow function whose `=>` is toks[i]: it starts at its
// parameters and ends at its body's closing brace, or, for an expression
// body, at the expression's last token.
func arrowAt(toks []jsToken, i int) (scriptFunction, bool, error) {
	if i == 0 || i+1 >= len(toks) {
		return scriptFunction{}, false, fmt.Errorf("=> without parameters or body")
	}
	first := i - 1
	if toks[first].text == ")" {
		open, err := matchingBack(toks, first)
		if err != nil {
			return scriptFunction{}, false, err
		}
		first = open
	}
	if first > 0 && toks[first-1].text == "async" {
		first--
	}
	name := "(anonymous arrow)"
	if first >= 2 && toks[first-2].kind == 'w' && (toks[first-1].text == "=" || toks[first-1].text == ":") {
		name = toks[first-2].text
	}
	last, err := arrowBodyEnd(toks, i+1)
	if err != nil {
		return scriptFunction{}, false, err
	}
	return scriptFunction{name: name, start: toks[first].line, end: toks[last].line}, true, nil
}

// arrowBodyEnd is the index of the last token of the arrow body that starts
// at toks[at].
func arrowBodyEnd(toks []jsToken, at int) (int, error) {
	if toks[at].text == "{" {
		return matching(toks, at)
	}
	depth := 0
	for k := at; k < len(toks); k++ {
		switch toks[k].text {
		case "(", "[", "{":
			depth++
		case ")", "]", "}":
			if depth == 0 {
				return k - 1, nil
			}
			depth--
		case ",", ";":
			if depth == 0 {
				return k - 1, nil
			}
		}
	}
	return len(toks) - 1, nil
}

// jsKeywords are the words that a parenthesis and a brace follow without
// making a method: `if (x) {`, `catch (e) {`.
var jsKeywords = map[string]bool{"if": true, "for": true, "while": true, "switch": true, "catch": true, "with": true, "function": true}

// methodAt reads a shorthand method, `name(params) {`, whose name is
// toks[i]; anything else that is a word before a parenthesis (a call, an
// `if`) is not one.
func methodAt(toks []jsToken, i int) (scriptFunction, bool, error) {
	if jsKeywords[toks[i].text] || (i > 0 && (toks[i-1].text == "function" || toks[i-1].text == "." || toks[i-1].text == "*")) {
		return scriptFunction{}, false, nil
	}
	close, err := matching(toks, i+1)
	if err != nil {
		return scriptFunction{}, false, err
	}
	if close+1 >= len(toks) || toks[close+1].text != "{" {
		return scriptFunction{}, false, nil
	}
	end, err := matching(toks, close+1)
	if err != nil {
		return scriptFunction{}, false, err
	}
	return scriptFunction{name: toks[i].text, start: toks[i].line, end: toks[end].line}, true, nil
}

var jsPairs = map[string]string{"(": ")", "[": "]", "{": "}"}

// matching is the index of the bracket that closes the one at toks[open].
func matching(toks []jsToken, open int) (int, error) {
	var stack []string
	for k := open; k < len(toks); k++ {
		t := toks[k]
		if t.kind != 'p' {
			continue
		}
		if c, ok := jsPairs[t.text]; ok {
			stack = append(stack, c)
			continue
		}
		if t.text == ")" || t.text == "]" || t.text == "}" {
			if len(stack) == 0 || stack[len(stack)-1] != t.text {
				return 0, fmt.Errorf("line %d: %q closes nothing open", t.line, t.text)
			}
			stack = stack[:len(stack)-1]
			if len(stack) == 0 {
				return k, nil
			}
		}
	}
	return 0, fmt.Errorf("line %d: %q is never closed", toks[open].line, toks[open].text)
}

// matchingBack is the index of the bracket that opens the one at toks[close].
func matchingBack(toks []jsToken, close int) (int, error) {
	depth := 0
	for k := close; k >= 0; k-- {
		switch toks[k].text {
		case ")", "]", "}":
			depth++
		case "(", "[", "{":
			depth--
			if depth == 0 {
				return k, nil
			}
		}
	}
	return 0, fmt.Errorf("line %d: %q opens nowhere", toks[close].line, toks[close].text)
}
