package sweepfile

import (
	"fmt"
	"unicode/utf8"

	"github.com/goccy/go-yaml/lexer"
	"github.com/goccy/go-yaml/token"

	"github.com/vlmfleet/vlmfleet/controller/api"
)

// Limits on a sweep file in YAML, checked before the YAML parser runs. The
// parser's memory grows with the square of the nesting (80 KB of "[" took
// 2.5 GB before it refused them), with every alias it expands (400 bytes of
// anchors that alias each other took 200 MB) and by about a kilobyte a
// value. A sweep file needs a few levels, no alias and tens of values:
// these limits are far above that and far below what would cost the
// controller.
const (
	// MaxSweepYAML bounds the YAML of one sweep file: the longest prompt
	// (protocol.MaxTextLen) twice over.
	MaxSweepYAML = 64 << 10
	// maxYAMLDepth bounds the nesting of lists and mappings; a sweep file
	// has three levels (workload, its lists, their items).
	maxYAMLDepth = 32
	// maxYAMLTokens bounds the scanner's tokens but comments (values and
	// indicators): room for lists of hundreds of agents and deployments.
	maxYAMLTokens = 8192
)

// checkSweepYAML refuses what would make the YAML parser spend far more
// than the file's size, in two passes that each cost about its size: a
// byte scan that allocates nothing, for the nesting and the values of
// flow collections as a YAML scanner would see them (closely, not exactly:
// where it is unsure it lets the file through rather than refuse one the
// parser would take), then the YAML scanner's own tokens, exact, for what
// the bytes cannot say for sure. The scanner's memory is linear, about 300
// bytes a byte at worst, which the size limit bounds.
func checkSweepYAML(data []byte) error {
	if err := scanYAMLBytes(data); err != nil {
		return err
	}
	if len(data) > MaxSweepYAML {
		return &api.SweepInputError{Err: fmt.Errorf("the YAML is %d bytes, at most %d (%d KiB)", len(data), MaxSweepYAML, MaxSweepYAML>>10)}
	}
	return checkYAMLTokens(lexer.Tokenize(string(data)))
}

func yamlLimitError(line, column int, format string, args ...any) error {
	return &api.SweepInputError{Line: line, Column: column,
		Err: fmt.Errorf(format, args...)}
}

func yamlDepthError(line, column int) error {
	return yamlLimitError(line, column, "lists and mappings nested more than %d deep; a sweep file needs 3", maxYAMLDepth)
}

func yamlCountError(line, column int) error {
	return yamlLimitError(line, column, "more than %d values and indicators; a sweep file needs tens", maxYAMLTokens)
}

// yamlBytes is the byte scan's state. It follows quoted scalars (which may
// span lines), comments and flow collections ([ ] { }), and the block
// indicators ("- ", "? ") that open a level each before a line's value.
type yamlBytes struct {
	data      []byte
	i         int
	line, col int
	flow      int  // open [ and {
	chain     int  // levels opened by "- " and "? " on this line
	leading   bool // nothing but indicators, tags and anchors yet on this line
	values    int  // flow collections and their commas: a value every two bytes
}

func scanYAMLBytes(data []byte) error {
	s := yamlBytes{data: data, line: 1, col: 1, leading: true}
	for s.i < len(data) {
		if err := s.step(); err != nil {
			return err
		}
	}
	return nil
}

// step reads one byte, or a whole comment or quoted scalar.
func (s *yamlBytes) step() error {
	c := s.data[s.i]
	switch {
	case c == '\n':
		s.chain, s.leading = 0, true
		s.advance()
		return nil
	case c == ' ' || c == '\t' || c == '\r':
		s.advance()
		return nil
	case c == '#' && s.tokenStart():
		for s.i < len(s.data) && s.data[s.i] != '\n' {
			s.advance()
		}
		return nil
	}
	switch {
	case (c == '"' || c == '\'') && s.tokenStart():
		s.leading = false
		s.skipQuoted(c)
		return nil
	case (c == '|' || c == '>') && s.flow == 0 && s.tokenStart() && s.blockScalarHeader():
		s.skipBlockScalar()
		return nil
	case c == '[' || c == '{':
		s.leading = false
		if s.flow > 0 || s.tokenStart() {
			s.flow++
			s.values++
			if s.flow+s.chain > maxYAMLDepth {
				return yamlDepthError(s.line, s.col)
			}
		}
	case c == ']' || c == '}':
		if s.flow > 0 {
			s.flow--
		}
	case c == ',' && s.flow > 0:
		s.values++
	case s.leading && s.flow == 0:
		return s.leadingStep(c)
	}
	s.advance()
	return s.checkCount()
}

// leadingStep reads one byte of what starts a line in a block: "- " and
// "? " each open a level ("- - - x" is three lists deep), tags and
// anchors are skipped, anything else is the line's value.
func (s *yamlBytes) leadingStep(c byte) error {
	next := byte(' ')
	if s.i+1 < len(s.data) {
		next = s.data[s.i+1]
	}
	switch {
	case (c == '-' || c == '?') && (next == ' ' || next == '\t' || next == '\n' || next == '\r'):
		s.chain++
		if s.chain > maxYAMLDepth {
			return yamlDepthError(s.line, s.col)
		}
	case c == '!' || c == '&':
		for s.i < len(s.data) && s.data[s.i] != ' ' && s.data[s.i] != '\n' {
			s.advance()
		}
		return nil
	default:
		s.leading = false
	}
	s.advance()
	return s.checkCount()
}

func (s *yamlBytes) checkCount() error {
	if s.values > maxYAMLTokens {
		return yamlCountError(s.line, s.col)
	}
	return nil
}

// tokenStart reports whether the byte at i may start a token: at a line's
// start, after a space or after a flow indicator. Inside a plain scalar
// ("don't", "a#b", "x[1]") a quote, "#" or bracket is text.
func (s *yamlBytes) tokenStart() bool {
	if s.i == 0 {
		return true
	}
	switch s.data[s.i-1] {
	case '\n', ' ', '\t', '\r', '[', '{', ',':
		return true
	}
	return false
}

// skipQuoted skips a quoted scalar from its opening quote to its closing
// one, across lines: a backslash escapes in double quotes, a doubled
// quote is one quote in single ones. Unclosed, it runs to the end, where
// the parser says so.
func (s *yamlBytes) skipQuoted(q byte) {
	s.advance()
	for s.i < len(s.data) {
		c := s.data[s.i]
		switch {
		case c == '\\' && q == '"' && s.i+1 < len(s.data):
			s.advance()
		case c == q && q == '\'' && s.i+1 < len(s.data) && s.data[s.i+1] == '\'':
			s.advance()
		case c == q:
			s.advance()
			return
		}
		s.advance()
	}
}

// blockScalarHeader reports whether the "|" or ">" at i starts a block
// scalar: only its indicators, spaces and a comment follow on the line.
func (s *yamlBytes) blockScalarHeader() bool {
	j := s.i + 1
	for j < len(s.data) && (s.data[j] == '-' || s.data[j] == '+' || (s.data[j] >= '0' && s.data[j] <= '9')) {
		j++
	}
	for j < len(s.data) && (s.data[j] == ' ' || s.data[j] == '\t') {
		j++
	}
	return j == len(s.data) || s.data[j] == '\n' || s.data[j] == '\r' || (s.data[j] == '#' && j > s.i+1 && s.data[j-1] == ' ')
}

// skipBlockScalar skips a block scalar's header and its text: the lines
// after it that are blank or indented more than the header's line.
func (s *yamlBytes) skipBlockScalar() {
	start := s.i
	for start > 0 && s.data[start-1] != '\n' {
		start--
	}
	indent := 0
	for start+indent < len(s.data) && s.data[start+indent] == ' ' {
		indent++
	}
	for {
		for s.i < len(s.data) && s.data[s.i] != '\n' {
			s.advance()
		}
		if s.i == len(s.data) {
			return
		}
		j := s.i + 1
		for j < len(s.data) && s.data[j] == ' ' {
			j++
		}
		if j < len(s.data) && s.data[j] != '\n' && s.data[j] != '\r' && j-(s.i+1) <= indent {
			return // a line of the document: the text has ended
		}
		s.advance()
	}
}

// advance moves past one byte, counting lines and columns as the YAML
// scanner does (a column is a character, not a byte).
func (s *yamlBytes) advance() {
	c := s.data[s.i]
	s.i++
	switch {
	case c == '\n':
		s.line, s.col = s.line+1, 1
	case c < utf8.RuneSelf || c >= 0xC0:
		s.col++ // an ASCII byte or the first byte of a character
	}
}

// checkYAMLTokens checks on the YAML scanner's tokens, exactly, what the
// byte scan approximates (the nesting and the count), and refuses
// anchors, aliases, tags and merge keys: a sweep file has no use for them,
// and each alias makes the decoder walk the value it names again.
func checkYAMLTokens(tokens token.Tokens) error {
	var d yamlDepth
	n := 0
	for i, tk := range tokens {
		line, col := 0, 0
		if tk.Position != nil {
			line, col = tk.Position.Line, tk.Position.Column
		}
		if tk.Type == token.CommentType {
			continue
		}
		if n++; n > maxYAMLTokens {
			return yamlCountError(line, col)
		}
		switch tk.Type {
		case token.AnchorType, token.AliasType, token.TagType, token.MergeKeyType:
			return yamlLimitError(line, col, "%q: a sweep file takes no anchors, aliases, tags or merge keys (&, *, !, <<); write the value out", tokenText(tk))
		}
		if d.add(tokens, i) > maxYAMLDepth {
			return yamlDepthError(line, col)
		}
	}
	return nil
}

// tokenText is a token as written: an anchor or alias with its name.
func tokenText(tk *token.Token) string {
	if (tk.Type == token.AnchorType || tk.Type == token.AliasType) && tk.Next != nil {
		return tk.Value + tk.Next.Value
	}
	return tk.Value
}

// yamlDepth follows the nesting through the tokens: flow collections by
// their brackets, block ones by the columns of their indicators.
type yamlDepth struct {
	flow int
	// block holds the columns of the open block collections: a list's
	// "-", a mapping's keys; a token left of one closes it.
	block []int
}

// add takes tokens[i] and returns the depth after it.
func (d *yamlDepth) add(tokens token.Tokens, i int) int {
	switch tk := tokens[i]; tk.Type {
	case token.SequenceStartType, token.MappingStartType:
		d.flow++
	case token.SequenceEndType, token.MappingEndType:
		if d.flow > 0 {
			d.flow--
		}
	case token.DocumentHeaderType:
		d.block = d.block[:0]
	case token.SequenceEntryType, token.MappingKeyType:
		if d.flow == 0 {
			d.nest(tk)
		}
	case token.MappingValueType:
		if d.flow == 0 && i > 0 {
			d.nest(tokens[i-1]) // the key
		}
	}
	return d.flow + len(d.block)
}

func (d *yamlDepth) nest(tk *token.Token) {
	if tk.Position == nil {
		return
	}
	col := tk.Position.Column
	for len(d.block) > 0 && d.block[len(d.block)-1] > col {
		d.block = d.block[:len(d.block)-1]
	}
	if len(d.block) == 0 || d.block[len(d.block)-1] < col {
		d.block = append(d.block, col)
	}
}
