package web

import (
	"fmt"
	"strings"
)

// jsLexer splits a script into tokens. Comments go; strings, template text
// and regular expressions become literal tokens with no text, so that no
// bracket inside them is counted.
type jsLexer struct {
	src   string
	pos   int
	line  int
	toks  []jsToken
	depth int   // braces open in code
	holes []int // the brace depth at which each open template ${ resumes
}

func jsTokens(src string) ([]jsToken, error) {
	lx := &jsLexer{src: src, line: 1}
	for lx.pos < len(lx.src) {
		if err := lx.next(); err != nil {
			return nil, fmt.Errorf("line %d: %w", lx.line, err)
		}
	}
	if len(lx.holes) > 0 {
		return nil, fmt.Errorf("a template's ${ is never closed")
	}
	return lx.toks, nil
}

func (lx *jsLexer) emit(kind byte, text string, line int) {
	lx.toks = append(lx.toks, jsToken{kind: kind, text: text, line: line})
}

// next reads one token, or a stretch of space or a comment.
func (lx *jsLexer) next() error {
	c := lx.src[lx.pos]
	rest := lx.src[lx.pos:]
	switch {
	case c == '\n':
		lx.line++
		lx.pos++
	case c == ' ' || c == '\t' || c == '\r':
		lx.pos++
	case strings.HasPrefix(rest, "//"):
		if end := strings.IndexByte(rest, '\n'); end >= 0 {
			lx.pos += end
		} else {
			lx.pos = len(lx.src)
		}
	case strings.HasPrefix(rest, "/*"):
		end := strings.Index(rest, "*/")
		if end < 0 {
			return fmt.Errorf("a comment is never closed")
		}
		lx.line += strings.Count(rest[:end], "\n")
		lx.pos += end + 2
	case c == '\'' || c == '"':
		return lx.quoted(c)
	case c == '`':
		lx.pos++
		return lx.template()
	case c == '/' && lx.regexAllowed():
		return lx.regex()
	case isWordByte(c):
		start := lx.pos
		for lx.pos < len(lx.src) && isWordByte(lx.src[lx.pos]) {
			lx.pos++
		}
		lx.emit('w', lx.src[start:lx.pos], lx.line)
	default:
		return lx.punct(c)
	}
	return nil
}

// punct reads one punctuation character, or "=>", and keeps count of the
// braces so that the } that closes a template's ${ is known.
func (lx *jsLexer) punct(c byte) error {
	lx.pos++
	switch c {
	case '=':
		if lx.pos < len(lx.src) && lx.src[lx.pos] == '>' {
			lx.pos++
			lx.emit('p', "=>", lx.line)
			return nil
		}
	case '{':
		lx.depth++
	case '}':
		if n := len(lx.holes); n > 0 && lx.holes[n-1] == lx.depth {
			lx.holes = lx.holes[:n-1]
			return lx.template()
		}
		lx.depth--
	}
	lx.emit('p', string(c), lx.line)
	return nil
}

func isWordByte(c byte) bool {
	return c == '_' || c == '$' || c >= 0x80 || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') || ('0' <= c && c <= '9')
}

// quoted reads a ” or "" string.
func (lx *jsLexer) quoted(q byte) error {
	line := lx.line
	for i := lx.pos + 1; i < len(lx.src); i++ {
		switch lx.src[i] {
		case '\\':
			i++
		case '\n':
			return fmt.Errorf("a string runs past the end of its line")
		case q:
			lx.pos = i + 1
			lx.emit('l', "", line)
			return nil
		}
	}
	return fmt.Errorf("a string is never closed")
}

// template reads template text from lx.pos up to its closing backquote or
// to a ${, whose code is read as code until its closing brace.
func (lx *jsLexer) template() error {
	line := lx.line
	for i := lx.pos; i < len(lx.src); i++ {
		switch lx.src[i] {
		case '\\':
			i++
		case '\n':
			lx.line++
		case '`':
			lx.pos = i + 1
			lx.emit('l', "", line)
			return nil
		case '$':
			if i+1 < len(lx.src) && lx.src[i+1] == '{' {
				lx.pos = i + 2
				lx.emit('l', "", line)
				lx.holes = append(lx.holes, lx.depth)
				return nil
			}
		}
	}
	return fmt.Errorf("a template is never closed")
}

// jsBeforeExpression are the words after which a slash starts a regular
// expression rather than divides.
var jsBeforeExpression = map[string]bool{"return": true, "typeof": true, "case": true, "in": true, "of": true, "new": true,
	"delete": true, "void": true, "throw": true, "instanceof": true, "yield": true, "await": true}

// regexAllowed reports whether a slash here starts a regular expression:
// it does unless it follows a value (a word, a literal or a closing bracket).
func (lx *jsLexer) regexAllowed() bool {
	if len(lx.toks) == 0 {
		return true
	}
	prev := lx.toks[len(lx.toks)-1]
	switch {
	case prev.kind == 'w':
		return jsBeforeExpression[prev.text]
	case prev.kind == 'l':
		return false
	default:
		return prev.text != ")" && prev.text != "]" && prev.text != "}"
	}
}

// regex reads a regular expression literal and its flags.
func (lx *jsLexer) regex() error {
	inClass := false
	for i := lx.pos + 1; i < len(lx.src); i++ {
		switch c := lx.src[i]; {
		case c == '\\':
			i++
		case c == '\n':
			return fmt.Errorf("a regular expression runs past the end of its line")
		case c == '[':
			inClass = true
		case c == ']':
			inClass = false
		case c == '/' && !inClass:
			i++
			for i < len(lx.src) && isWordByte(lx.src[i]) {
				i++
			}
			lx.pos = i
			lx.emit('l', "", lx.line)
			return nil
		}
	}
	return fmt.Errorf("a regular expression is never closed")
}
