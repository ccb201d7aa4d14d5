// Package clitest holds a command's documentation to its flags: each
// command's TestDocs calls Check, which fails, naming the flag and the
// file, when a flag in --help is missing from docs/NAME.md, the manual page
// or the completion scripts, or when one of the generated files is not
// what the flags and the command's cli.Command make now; with
// IWKIT_UPDATE_DOCS=1 it rewrites them instead (docs/generate.sh).
package clitest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/iwkit/iwkit/internal/cli"
	"github.com/iwkit/iwkit/internal/testenv"
)

// Run runs the command in-process: its run function's shape.
type Run func(args []string, stdout, stderr io.Writer) int

// Update says the generated files are to be rewritten, not checked.
func Update() bool { return os.Getenv("IWKIT_UPDATE_DOCS") == "1" }

// Root is the repository's root, found from the test's directory.
func Root(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		up := filepath.Dir(dir)
		if up == dir {
			t.Fatal("no go.mod above the test's directory")
		}
		dir = up
	}
}

// Describe runs the command with the describe flag and reads its Spec.
func Describe(t testing.TB, run Run) cli.Spec {
	t.Helper()
	var out, errb bytes.Buffer
	if code := run([]string{"--" + cli.DescribeFlag}, &out, &errb); code != 0 {
		t.Fatalf("--%s: exit %d: %s", cli.DescribeFlag, code, errb.String())
	}
	var s cli.Spec
	if err := json.Unmarshal(out.Bytes(), &s); err != nil {
		t.Fatalf("--%s: %v", cli.DescribeFlag, err)
	}
	return s
}

// Check checks (or, with IWKIT_UPDATE_DOCS=1, writes) every file made from
// the command's flags, and its -h, --help and --version.
func Check(t *testing.T, run Run) {
	s := Describe(t, run)
	root := Root(t)
	rel := func(p string) string { return filepath.Join(root, p) }

	// Every flag documented, named in the failure with the file to fix.
	page := filepath.Join("docs", s.Name+".md")
	man := filepath.Join("docs", "man", s.Name+".1")
	bash := filepath.Join("docs", "completion", "bash", s.Name)
	zsh := filepath.Join("docs", "completion", "zsh", "_"+s.Name)
	hint := fmt.Sprintf("IWKIT_UPDATE_DOCS=1 go test ./cmd/%s -run TestDocs (or docs/generate.sh) rewrites it", s.Name)

	// The docs page: its generated block.
	pageText := readFile(t, rel(page))
	i, j := strings.Index(pageText, cli.OptionsBegin), strings.Index(pageText, cli.OptionsEnd)
	if i < 0 || j < i {
		t.Fatalf("%s: no %q ... %q block", page, cli.OptionsBegin, cli.OptionsEnd)
	}
	block := pageText[i+len(cli.OptionsBegin) : j]
	generated := []struct {
		path, have, want string
		write            func(string) string
	}{
		{page, block, s.Markdown(), func(w string) string { return pageText[:i+len(cli.OptionsBegin)] + w + pageText[j:] }},
		{man, readMaybe(rel(man)), s.Man(), nil},
		{bash, readMaybe(rel(bash)), s.Bash(), nil},
		{zsh, readMaybe(rel(zsh)), s.Zsh(), nil},
	}
	for _, g := range generated {
		if g.have == g.want {
			continue
		}
		if Update() {
			out := g.want
			if g.write != nil {
				out = g.write(g.want)
			}
			if err := os.MkdirAll(filepath.Dir(rel(g.path)), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(rel(g.path), []byte(out), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		var missing []string
		for _, f := range s.Flags {
			if !mentions(g.path, g.have, f) {
				missing = append(missing, cli.Dash(f.Name))
			}
		}
		if len(missing) > 0 {
			t.Errorf("%s: flags of %s --help missing: %s; %s (and describe each in the page's prose)", g.path, s.Name, strings.Join(missing, ", "), hint)
		} else {
			t.Errorf("%s is not what %s's flags and cli.Command make now; %s", g.path, s.Name, hint)
		}
	}

	checkHelp(t, s, run)
	checkMan(t, rel(man))
	checkCompletion(t, s, rel(bash), rel(zsh))
}

// checkCompletion: the scripts parse (bash -n, zsh -n), and bash's
// completion function, called as bash calls it on Tab (COMP_WORDS,
// COMP_CWORD), offers every flag, the words and fields of the flags that
// have them, interface names and file names.
func checkCompletion(t *testing.T, s cli.Spec, bashPath, zshPath string) {
	t.Helper()
	bash := testenv.Tool(t, "bash")
	if out, err := exec.Command(bash, "-n", bashPath).CombinedOutput(); err != nil {
		t.Errorf("bash -n %s: %v\n%s", bashPath, err, out)
	}
	zsh := testenv.Tool(t, "zsh")
	if out, err := exec.Command(zsh, "-n", zshPath).CombinedOutput(); err != nil {
		t.Errorf("zsh -n %s: %v\n%s", zshPath, err, out)
	}
	type tab struct {
		words []string // the command line; the last is the word being completed
		want  []string // COMPREPLY must hold each
	}
	var tabs []tab
	var all []string
	for _, f := range s.Flags {
		all = append(all, cli.Dash(f.Name))
	}
	tabs = append(tabs, tab{[]string{s.Name, "-"}, all})
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "capture.pcap"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, f := range s.Flags {
		if f.Arg == "" {
			continue
		}
		d := cli.Dash(f.Name)
		switch kind := s.ArgKind(f); kind {
		case "words":
			tabs = append(tabs, tab{[]string{s.Name, d, ""}, s.Values[f.Name]})
		case "fields":
			if len(s.FieldNames) == 0 {
				t.Errorf("%s %s completes fields, but the command lists none", s.Name, d)
				continue
			}
			last := s.FieldNames[len(s.FieldNames)-1]
			tabs = append(tabs, tab{[]string{s.Name, d, last[:len(last)-1]}, []string{last}})
		case "file":
			tabs = append(tabs, tab{[]string{s.Name, d, "capt"}, []string{"capture.pcap"}})
		case "iface":
			tabs = append(tabs, tab{[]string{s.Name, d, ""}, []string{"any", "lo"}})
		}
	}
	switch s.Operands {
	case "fields", "dir-fields":
		last := s.FieldNames[len(s.FieldNames)-1]
		tabs = append(tabs, tab{[]string{s.Name, last[:len(last)-1]}, []string{last}})
	case "words":
		tabs = append(tabs, tab{[]string{s.Name, ""}, s.Values[""]})
	}
	var script strings.Builder
	fmt.Fprintf(&script, "source %s || exit 1\n", shellQuote(bashPath))
	for i, tb := range tabs {
		q := make([]string, len(tb.words))
		for j, w := range tb.words {
			q[j] = shellQuote(w)
		}
		fmt.Fprintf(&script, "COMP_WORDS=(%s); COMP_CWORD=%d; COMPREPLY=(); %s; printf '%d\\t%%s\\n' \"${COMPREPLY[@]}\"\n",
			strings.Join(q, " "), len(tb.words)-1, "_iwkit_"+strings.ReplaceAll(s.Name, "-", "_"), i)
	}
	cmd := exec.Command(bash, "--norc", "--noprofile", "-c", script.String())
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("bash completion: %v\n%s", err, out)
	}
	got := map[int]map[string]bool{}
	for _, l := range strings.Split(string(out), "\n") {
		var i int
		var w string
		if n, _ := fmt.Sscanf(l, "%d\t%s", &i, &w); n == 2 {
			if got[i] == nil {
				got[i] = map[string]bool{}
			}
			got[i][w] = true
		}
	}
	for i, tb := range tabs {
		for _, w := range tb.want {
			if !got[i][w] {
				t.Errorf("%s: Tab after %q does not offer %q (offers %d words)", bashPath, strings.Join(tb.words, " "), w, len(got[i]))
			}
		}
	}
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// mentions says whether a generated file names flag f, as that kind of
// file writes it.
func mentions(path, text string, f cli.Flag) bool {
	d := cli.Dash(f.Name)
	switch {
	case strings.HasSuffix(path, ".1"):
		return strings.Contains(text, `\fB`+strings.ReplaceAll(d, "-", `\-`)+`\fR`)
	case strings.HasSuffix(path, ".md"):
		return strings.Contains(text, "`"+cli.FlagTerm(f)+"`")
	}
	return regexp.MustCompile(`(^|[ '|(])` + regexp.QuoteMeta(d) + `([ '\[|)]|$)`).MatchString(text)
}

// checkHelp: -h is short and shows the common flags, --help every flag,
// --version the build's line.
func checkHelp(t *testing.T, s cli.Spec, run Run) {
	t.Helper()
	short, code := output(t, run, "-h")
	if code != 0 {
		t.Errorf("%s -h: exit %d", s.Name, code)
	}
	full, code := output(t, run, "--help")
	if code != 0 {
		t.Errorf("%s --help: exit %d", s.Name, code)
	}
	if len(s.Common) == 0 {
		t.Errorf("%s: no common flags for -h", s.Name)
	}
	for _, c := range s.Common {
		f, ok := s.Lookup(c)
		if !ok {
			t.Errorf("%s: common flag %q is not a flag", s.Name, c)
			continue
		}
		if !strings.Contains(short, cli.FlagTerm(f)) {
			t.Errorf("%s -h does not show %s", s.Name, cli.FlagTerm(f))
		}
	}
	for _, f := range s.Flags {
		if !strings.Contains(full, "  "+cli.FlagTerm(f)) {
			t.Errorf("%s --help does not show %s", s.Name, cli.FlagTerm(f))
		}
	}
	if n := strings.Count(short, "\n"); n > 40 || n >= strings.Count(full, "\n") {
		t.Errorf("%s -h is %d lines (--help %d): -h must fit a terminal", s.Name, n, strings.Count(full, "\n"))
	}
	for _, l := range strings.Split(short, "\n") {
		if len([]rune(l)) > 80 && !strings.HasPrefix(l, "usage:") && !strings.HasPrefix(l, "       ") {
			t.Errorf("%s -h: line wider than 80 columns: %q", s.Name, l)
		}
	}
	v, code := output(t, run, "--version")
	if code != 0 || !strings.HasPrefix(v, s.Name+" (iwkit) ") {
		t.Errorf("%s --version: exit %d, %q", s.Name, code, v)
	}
}

func output(t *testing.T, run Run, args ...string) (string, int) {
	var out, errb bytes.Buffer
	code := run(args, &out, &errb)
	return out.String(), code
}

// checkMan renders the page with groff -ww (every warning) and fails on
// any warning or error.
func checkMan(t *testing.T, path string) {
	t.Helper()
	groff := testenv.Tool(t, "groff")
	cmd := exec.Command(groff, "-ww", "-man", "-Tutf8", path)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil || stderr.Len() > 0 {
		t.Errorf("groff -ww -man -Tutf8 %s: %v\n%s", path, err, stderr.String())
	}
	out = regexp.MustCompile("(.\x08)|\x1b\\[[0-9;]*m").ReplaceAll(out, nil) // bold and underline
	if !bytes.Contains(out, []byte("SYNOPSIS")) || !bytes.Contains(out, []byte("OPTIONS")) {
		t.Errorf("%s renders without SYNOPSIS or OPTIONS:\n%s", path, out)
	}
}

// CheckBlock checks (or rewrites) the block of the file at path (from the
// repository's root) between the lines begin and end: it must be want.
func CheckBlock(t *testing.T, path, begin, end, want string) {
	t.Helper()
	full := filepath.Join(Root(t), path)
	text := readFile(t, full)
	i, j := strings.Index(text, begin), strings.Index(text, end)
	if i < 0 || j < i {
		t.Fatalf("%s: no %q ... %q block", path, begin, end)
	}
	if text[i+len(begin):j] == want {
		return
	}
	if Update() {
		if err := os.WriteFile(full, []byte(text[:i+len(begin)]+want+text[j:]), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("%s: the generated block differs from its source; IWKIT_UPDATE_DOCS=1 go test -run TestDocs (or docs/generate.sh) rewrites it", path)
}

func readFile(t testing.TB, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func readMaybe(path string) string {
	b, _ := os.ReadFile(path)
	return string(b)
}
