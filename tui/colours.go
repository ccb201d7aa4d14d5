package tui

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/gdamore/tcell/v2"

	"github.com/iwkit/iwkit/analyze"
	"github.com/iwkit/iwkit/filter"
)

// The user's colouring rules: Wireshark's colorfilters file, in iwtui's
// config directory beside the settings (ColoursPath), so that a
// Wireshark user copies theirs. A line is
//
//	@NAME@DISPLAY FILTER@[BG][FG]
//
// as Wireshark writes it: the background first, each colour three 16-bit
// components "r,g,b" (0..65535); "!@" starts a rule switched off, "#" a
// comment. The filter is the display filter language of iwdump -Y and the
// filter bar (one compiler, analyze.CompileFilter), so a Wireshark rule
// whose fields iwkit does not name is reported and skipped. Besides RGB,
// a rule may name a theme colour for its text on the terminal's own
// background: "[default][error]" (error, warning, note, mpa, read,
// write, terminate, link, good), drawn in the theme's shade of it.
//
// Legibility: an RGB pair sets both the text and the background, so the
// row reads the same on a dark or a light terminal (Wireshark's own pairs
// are chosen so); a theme colour is the theme's, chosen for its
// background. An RGB text colour on the terminal's background, which
// would vanish on one of them, is refused. Without colour (theme none,
// NO_COLOR) and with Z (colouring off) no rule colours.
//
// The rules are tried in order before the built-in ones; the first whose
// filter matches a row colours it. A pass over the capture (the display
// filter's, Session.start) marks the rows each rule colours, and the
// indexer the rows that come later: a bit a row a rule.

// ColourRule is one rule of the colorfilters file.
type ColourRule struct {
	Line   int         // in the file, from 1
	Name   string      // as the file names it
	Expr   string      // the display filter
	FG, BG tcell.Color // RGB; BG ColorDefault: Role names the text colour
	Role   string      // a theme colour (themeColours), on the terminal's background
	f      *filter.Filter[*analyze.Record]
}

// themeColours are the names a rule may give instead of an RGB text
// colour (on the terminal's background): the theme's roles.
var themeColours = []string{"error", "warning", "note", "mpa", "read", "write", "terminate", "link", "good"}

// themeColour is the theme's shade of role name.
func themeColour(name string) tcell.Color {
	p := palette
	return map[string]tcell.Color{"error": p.Error, "warning": p.Warning, "note": p.Note, "mpa": p.MPA, "read": p.Read,
		"write": p.Write, "terminate": p.Terminate, "link": p.Link, "good": p.Good}[name]
}

// ColoursPath is the colouring rules' file: "colorfilters" beside the
// settings file ("" when there is no config directory).
func ColoursPath() string {
	p := ConfigPath()
	if p == "" {
		return ""
	}
	return filepath.Join(filepath.Dir(p), "colorfilters")
}

// LoadColours reads the colouring rules file (none: no rules, no error):
// the rules that parse and compile, and an error for each line that does
// not (that rule is skipped).
func LoadColours() ([]ColourRule, []error) {
	path := ColoursPath()
	if path == "" {
		return nil, nil
	}
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, []error{err}
	}
	defer f.Close()
	return ParseColours(f, filepath.Base(path)) // the status line is narrow; :colours shows the path
}

// ParseColours reads colouring rules in the colorfilters format (name
// names the file in the errors).
func ParseColours(r io.Reader, name string) ([]ColourRule, []error) {
	var rules []ColourRule
	var errs []error
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 4096), 1<<20)
	for n := 1; sc.Scan(); n++ {
		ln := strings.TrimSpace(sc.Text())
		if ln == "" || ln[0] == '#' || strings.HasPrefix(ln, "!@") {
			continue
		}
		rule, err := parseColourRule(ln)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s line %d: %v (rule skipped)", name, n, err))
			continue
		}
		rule.Line = n
		rules = append(rules, rule)
	}
	if err := sc.Err(); err != nil {
		errs = append(errs, fmt.Errorf("%s: %v", name, err))
	}
	return rules, errs
}

func parseColourRule(ln string) (ColourRule, error) {
	var r ColourRule
	if ln[0] != '@' {
		return r, errors.New(`want @NAME@FILTER@[BG][FG] (a rule starts with "@")`)
	}
	rest := ln[1:]
	name, rest, ok := strings.Cut(rest, "@")
	if !ok {
		return r, errors.New("want @NAME@FILTER@[BG][FG]: no filter after the name")
	}
	// The filter runs to the last "@": a filter may hold "@" in a string.
	at := strings.LastIndex(rest, "@")
	if at < 0 {
		return r, fmt.Errorf("rule %q: want @NAME@FILTER@[BG][FG]: no colours after the filter", name)
	}
	expr, cols := strings.TrimSpace(rest[:at]), strings.TrimSpace(rest[at+1:])
	r.Name, r.Expr = name, expr
	bg, fg, role, err := parseColourPair(cols)
	if err != nil {
		return r, fmt.Errorf("rule %q: %v", name, err)
	}
	r.BG, r.FG, r.Role = bg, fg, role
	if expr == "" {
		return r, fmt.Errorf("rule %q: no filter", name)
	}
	f, err := analyze.CompileFilter(expr)
	if err != nil {
		return r, fmt.Errorf("rule %q: %v", name, err)
	}
	r.f = f
	return r, nil
}

// parseColourPair reads "[BG][FG]".
func parseColourPair(s string) (bg, fg tcell.Color, role string, err error) {
	var parts []string
	for s != "" {
		if s[0] != '[' {
			return 0, 0, "", fmt.Errorf("colours %q: want [BG][FG]", s)
		}
		end := strings.IndexByte(s, ']')
		if end < 0 {
			return 0, 0, "", fmt.Errorf("colours %q: no closing ]", s)
		}
		parts = append(parts, strings.TrimSpace(s[1:end]))
		s = strings.TrimSpace(s[end+1:])
	}
	if len(parts) != 2 {
		return 0, 0, "", fmt.Errorf("want two colours, [BG][FG] (background first, as Wireshark writes them), have %d", len(parts))
	}
	bgRGB, fgRGB := strings.Contains(parts[0], ","), strings.Contains(parts[1], ",")
	switch {
	case bgRGB && fgRGB:
		if bg, err = parseRGB(parts[0]); err != nil {
			return 0, 0, "", fmt.Errorf("background: %v", err)
		}
		if fg, err = parseRGB(parts[1]); err != nil {
			return 0, 0, "", fmt.Errorf("text colour: %v", err)
		}
		return bg, fg, "", nil
	case !bgRGB && !fgRGB && parts[0] == "default":
		for _, n := range themeColours {
			if parts[1] == n {
				return tcell.ColorDefault, tcell.ColorDefault, n, nil // the theme's shade when drawn (themeColour)
			}
		}
		return 0, 0, "", fmt.Errorf("text colour %q: want r,g,b or a theme colour (%s)", parts[1], strings.Join(themeColours, ", "))
	case fgRGB:
		return 0, 0, "", errors.New("an r,g,b text colour needs an r,g,b background, or it vanishes on a dark or a light terminal; on the terminal's own background name a theme colour: [default][error]")
	}
	return 0, 0, "", fmt.Errorf("colours [%s][%s]: want [r,g,b][r,g,b] or [default][THEME COLOUR] (%s)", parts[0], parts[1], strings.Join(themeColours, ", "))
}

// parseRGB reads "r,g,b", Wireshark's 16-bit components.
func parseRGB(s string) (tcell.Color, error) {
	f := strings.Split(s, ",")
	if len(f) != 3 {
		return 0, fmt.Errorf("%q: want r,g,b", s)
	}
	var c [3]int32
	for i, x := range f {
		v, err := strconv.ParseUint(strings.TrimSpace(x), 10, 16)
		if err != nil {
			return 0, fmt.Errorf("%q: want three numbers 0..65535", s)
		}
		c[i] = int32(v >> 8)
	}
	return tcell.NewRGBColor(c[0], c[1], c[2]), nil
}

// colourSet is the rules applied to a session: runs[k] marks the rows
// rule k colours.
type colourSet struct {
	rules []ColourRule
	runs  []*FilterRun
}

// userColours is the rules loaded (the legend's); nil: none.
var userColours atomic.Pointer[[]ColourRule]

// ApplyColours starts marking the rows each rule colours (none: the
// built-in rules alone).
func (s *Session) ApplyColours(rules []ColourRule) {
	if len(rules) == 0 {
		s.fmu.Lock()
		s.colours.Store(nil)
		s.whole.Store(s.cur.Load() != nil) // the display filter still matches
		s.fmu.Unlock()
		return
	}
	c := &colourSet{rules: rules}
	for _, r := range rules {
		c.runs = append(c.runs, &FilterRun{Expr: r.Expr, f: r.f})
	}
	s.start(c.runs, func() { s.colours.Store(c) })
}

// colourGen changes as the rules' pass marks rows (the ticker redraws).
func (s *Session) colourGen() uint64 {
	var g uint64
	if c := s.colours.Load(); c != nil {
		for _, fr := range c.runs {
			g += fr.Gen()
		}
	}
	return g
}

// userStyle is the colours a user's rule gives row i (false: none does).
func (s *Session) userStyle(i int) (fg, bg tcell.Color, ok bool) {
	c := s.colours.Load()
	if c == nil || !colouring || !palette.Colour {
		return 0, 0, false
	}
	for k, fr := range c.runs {
		if fr.Match(i) {
			r := &c.rules[k]
			if r.BG == tcell.ColorDefault {
				return themeColour(r.Role), tcell.ColorDefault, true
			}
			return r.FG, r.BG, true
		}
	}
	return 0, 0, false
}

// tag is the rule's colours as a tview style tag (the :colours page and
// the legend show each name in its own colours); none without colour.
func (r *ColourRule) tag() string {
	if !palette.Colour {
		return ""
	}
	if r.BG == tcell.ColorDefault {
		return "[" + themeColour(r.Role).CSS() + "]"
	}
	return "[" + r.FG.CSS() + ":" + r.BG.CSS() + "]"
}

// coloursLegend is the user's rules in the legend (the help, plain
// text): their names, in order; :colours shows each in its colours.
func coloursLegend() string {
	p := userColours.Load()
	if p == nil || len(*p) == 0 {
		return ""
	}
	var names []string
	for _, r := range *p {
		names = append(names, r.Name)
	}
	return fmt.Sprintf("\nYour colouring rules, tried first (%s; :colours shows and reloads them): %s.", ColoursPath(), strings.Join(names, ", "))
}
