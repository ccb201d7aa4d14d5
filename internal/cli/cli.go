// Package cli is what every iwkit command's flags share: -h (a short help
// that fits a terminal: the synopsis and the common options, as tcpdump -h),
// --help (every option), --version (internal/version), and the one
// description of a command that its manual page, its docs page and its
// shell completion are generated from. The flags themselves stay where
// the command defines them (its flag.FlagSet): this package reads the set,
// so there is no second list of flags to drift.
//
// A command wires it in three lines:
//
//	doc.Setup(fs, stderr)
//	err := fs.Parse(args)
//	if code, done := doc.Done(fs, err, stdout); done { return code }
//
// The generated files (docs/man/NAME.1, the options block of
// docs/NAME.md, docs/completion/bash/NAME, docs/completion/zsh/_NAME) are
// checked by each command's TestDocs (internal/cli/clitest) and rewritten
// with IWKIT_UPDATE_DOCS=1 (go generate ./cmd/..., or docs/generate.sh).
package cli

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/iwkit/iwkit/internal/exitcode"
	"github.com/iwkit/iwkit/internal/version"
)

// Command describes what a command's flag set does not hold: its synopsis,
// its description and examples, which flags -h shows, the exit statuses it
// returns and the words its shell completion offers.
type Command struct {
	Name     string   // the command's name: iwdump
	Summary  string   // the NAME line of the manual page: what it is, in a few words
	Synopsis []string // usage lines, each starting with the command's name
	// Description is the manual page's DESCRIPTION: paragraphs separated
	// by blank lines, plain text.
	Description string
	// Common names the flags -h shows (as they are defined, without
	// dashes), in the order shown; --help shows every flag.
	Common   []string
	Examples []Example
	Exit     []Exit   // the exit statuses it returns (codes from internal/exitcode)
	SeeAlso  []string // other manual pages: "iwtui(1)", "tcpdump(8)"
	// Footer, when set, writes text that --help and the manual page add
	// after the options (lists that come from the source: scenarios, tests).
	Footer func(w io.Writer) `json:"-"`
	// Values are the words a flag's argument completes to, by flag name;
	// "" is the operands (arguments after the flags).
	Values map[string][]string
	// Fields gives the field names that FIELD and filter arguments
	// complete to (the field table, as -G fields lists it); called only
	// for the docs.
	Fields func() []string `json:"-"`
	// Operands is what the arguments after the flags complete to: "file"
	// (the default), "dir", "fields" (Fields), "dir-fields" (both),
	// "words" (Values[""]), "none".
	Operands string
}

// Example is one command line and what it does.
type Example struct {
	Cmd  string // without a prompt
	Text string
}

// Exit is one exit status and what it means for the command.
type Exit struct {
	Code int
	Text string
}

// StandardExit is the exit statuses every command shares (docs/exit-status.md).
func StandardExit(failure string) []Exit {
	return []Exit{
		{exitcode.OK, "done (also -h, --help and --version)"},
		{exitcode.Failure, failure},
		{exitcode.Usage, "usage: a bad flag, argument or combination of them; nothing was done"},
	}
}

// DescribeFlag is the hidden flag that makes a command print its Spec as
// JSON and exit: what the documentation tests and generators read.
const DescribeFlag = "iwkit-describe"

// Flag is one flag as the docs show it.
type Flag struct {
	Name    string // as defined: "r", "max-flows"
	Arg     string // the argument's name ("FILE", "N"); "" for a boolean flag
	Usage   string // the usage text, without the argument's quotes
	Default string // the default, "" when it is the zero value
}

// Spec is a command's description with its flags: what the generators use.
type Spec struct {
	Command
	Flags      []Flag
	FooterText string
	FieldNames []string
}

// Dash is how the docs spell flag name: -x for one letter (and tcpdump's
// -ddd), --name for the others. Go's flag package takes either.
func Dash(name string) string {
	if len(name) == 1 || strings.Count(name, name[:1]) == len(name) {
		return "-" + name
	}
	return "--" + name
}

// Setup registers --help, --version and the describe flag on fs and sends
// its messages to stderr. Until Done, fs.Usage prints nothing (the flag
// package calls it on -h and on every mistake; Done prints the help where
// it belongs); from Done on it prints the short help to stderr, what a
// usage mistake the command finds itself shows.
func (c *Command) Setup(fs *flag.FlagSet, stderr io.Writer) {
	fs.SetOutput(stderr)
	fs.Bool("help", false, "print every option and exit (-h: the common ones)")
	fs.Bool("version", false, "print the version (module version and VCS revision) and exit")
	fs.Bool(DescribeFlag, false, "")
	fs.Usage = func() {}
}

// Done handles the outcome of fs.Parse(args): -h (flag.ErrHelp) prints the
// short help, --help every option, --version the version line, each on
// stdout with exit status 0; any other parse error is a usage mistake
// (the flag package has printed it on stderr; the short help follows it
// there). done is false when the command should go on.
func (c *Command) Done(fs *flag.FlagSet, err error, out io.Writer) (code int, done bool) {
	fs.Usage = func() { c.WriteShort(fs.Output(), fs) }
	switch {
	case errors.Is(err, flag.ErrHelp):
		c.WriteShort(out, fs)
		return exitcode.OK, true
	case err != nil:
		fs.Usage()
		return exitcode.Usage, true
	case isSet(fs, DescribeFlag):
		b, _ := json.MarshalIndent(c.Spec(fs), "", "  ")
		out.Write(append(b, '\n'))
		return exitcode.OK, true
	case isSet(fs, "help"):
		c.WriteFull(out, fs)
		return exitcode.OK, true
	case isSet(fs, "version"):
		fmt.Fprintln(out, version.Read().Line(c.Name))
		return exitcode.OK, true
	}
	return 0, false
}

func isSet(fs *flag.FlagSet, name string) bool {
	f := fs.Lookup(name)
	return f != nil && f.Value.String() == "true"
}

// Spec reads fs's flags (all but the describe flag) into a Spec.
func (c *Command) Spec(fs *flag.FlagSet) Spec {
	s := Spec{Command: *c}
	s.Footer, s.Fields = nil, nil
	if c.Fields != nil {
		s.FieldNames = c.Fields()
	}
	fs.VisitAll(func(f *flag.Flag) {
		if f.Name == DescribeFlag {
			return
		}
		arg, usage := flag.UnquoteUsage(f)
		def := f.DefValue
		switch def {
		case "0", "false", "[]", "0s":
			def = ""
		}
		s.Flags = append(s.Flags, Flag{Name: f.Name, Arg: arg, Usage: usage, Default: def})
	})
	if c.Footer != nil {
		var b strings.Builder
		c.Footer(&b)
		s.FooterText = b.String()
	}
	return s
}

// Lookup returns the flag called name.
func (s *Spec) Lookup(name string) (Flag, bool) {
	for _, f := range s.Flags {
		if f.Name == name {
			return f, true
		}
	}
	return Flag{}, false
}

// helpWidth is the width -h and --help wrap to: a terminal's.
const helpWidth = 80

// WriteShort writes -h: the synopsis and the common options.
func (c *Command) WriteShort(w io.Writer, fs *flag.FlagSet) {
	s := c.Spec(fs)
	c.writeSynopsis(w)
	fmt.Fprintln(w, "common options:")
	for _, name := range c.Common {
		if f, ok := s.Lookup(name); ok {
			writeShortFlag(w, f)
		}
	}
	fmt.Fprintf(w, "%s --help lists every option; man %s has examples.\n", c.Name, c.Name)
}

// WriteFull writes --help: the synopsis and every option.
func (c *Command) WriteFull(w io.Writer, fs *flag.FlagSet) {
	s := c.Spec(fs)
	c.writeSynopsis(w)
	if c.Summary != "" {
		fmt.Fprintf(w, "%s: %s.\n\n", c.Name, c.Summary)
	}
	fmt.Fprintln(w, "options:")
	for _, f := range s.Flags {
		writeFlagHelp(w, f, true)
	}
	if s.FooterText != "" {
		fmt.Fprintf(w, "\n%s", s.FooterText)
	}
	if len(c.Exit) > 0 {
		fmt.Fprint(w, "\nexit status:")
		for i, e := range c.Exit {
			sep := ","
			if i == 0 {
				sep = ""
			}
			fmt.Fprintf(w, "%s %d %s", sep, e.Code, firstClause(e.Text))
		}
		fmt.Fprintln(w)
	}
}

func firstClause(s string) string {
	if i := strings.IndexAny(s, ":;("); i > 0 {
		return strings.TrimSpace(s[:i])
	}
	return s
}

// writeSynopsis writes the usage lines, each wrapped to the terminal's
// width under its own start.
func (c *Command) writeSynopsis(w io.Writer) {
	for i, l := range c.Synopsis {
		lead := "       "
		if i == 0 {
			lead = "usage: "
		}
		name, rest, _ := strings.Cut(l, " ")
		indent := strings.Repeat(" ", len(lead)+len(name)+1)
		for j, part := range wrapGroups(rest, helpWidth-len(indent)) {
			if j == 0 {
				fmt.Fprintf(w, "%s%s %s\n", lead, name, part)
			} else {
				fmt.Fprintf(w, "%s%s\n", indent, part)
			}
		}
	}
	fmt.Fprintln(w)
}

// writeShortFlag writes one line of -h: the flag and the first clause of
// its usage, cut to the terminal's width.
func writeShortFlag(w io.Writer, f Flag) {
	const col = 22
	text := f.Usage
	if i := strings.IndexAny(text, ";("); i > 0 {
		text = strings.TrimSpace(text[:i])
	}
	term := "  " + FlagTerm(f)
	if len(term) >= col {
		fmt.Fprintln(w, term)
		term = ""
	}
	if r := []rune(text); len(r) > helpWidth-col {
		text = string(r[:helpWidth-col-3]) + "..."
	}
	fmt.Fprintf(w, "%-*s%s\n", col, term, text)
}

// FlagTerm is a flag as written in help and docs: "-r FILE", "--workers N".
func FlagTerm(f Flag) string {
	if f.Arg == "" {
		return Dash(f.Name)
	}
	return Dash(f.Name) + " " + f.Arg
}

// writeFlagHelp writes one flag: its term, then its usage wrapped beside
// or below it.
func writeFlagHelp(w io.Writer, f Flag, withDefault bool) {
	const col = 24
	term := "  " + FlagTerm(f)
	text := f.Usage
	if withDefault && f.Default != "" {
		text += " (default " + f.Default + ")"
	}
	lines := wrap(text, helpWidth-col)
	if len(term) >= col-1 {
		fmt.Fprintln(w, term)
		term = ""
	}
	for _, l := range lines {
		fmt.Fprintf(w, "%-*s%s\n", col, term, l)
		term = ""
	}
}

// wrapGroups is wrap that keeps [...] and {...} groups of a synopsis
// whole where they fit on a line.
func wrapGroups(s string, width int) []string {
	var toks []string
	depth, start := 0, 0
	for i, r := range s {
		switch r {
		case '[', '{':
			depth++
		case ']', '}':
			depth--
		case ' ':
			if depth == 0 {
				toks = append(toks, s[start:i])
				start = i + 1
			}
		}
	}
	toks = append(toks, s[start:])
	var lines []string
	cur := ""
	for _, t := range toks {
		if cur != "" && len([]rune(cur))+1+len([]rune(t)) > width {
			lines = append(lines, cur)
			cur = ""
		}
		if cur != "" {
			cur += " "
		}
		cur += t
	}
	return append(lines, cur)
}

// wrap breaks s into lines of at most width runes at spaces.
func wrap(s string, width int) []string {
	var lines []string
	var cur []rune
	for _, word := range strings.Fields(s) {
		wr := []rune(word)
		if len(cur) > 0 && len(cur)+1+len(wr) > width {
			lines = append(lines, string(cur))
			cur = nil
		}
		if len(cur) > 0 {
			cur = append(cur, ' ')
		}
		cur = append(cur, wr...)
	}
	if len(cur) > 0 || len(lines) == 0 {
		lines = append(lines, string(cur))
	}
	return lines
}
