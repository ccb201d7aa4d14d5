package cli_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

const root = "../.."

// markdownFiles are README.md, BENCHMARKS.md and every page under docs/.
func markdownFiles(t *testing.T) []string {
	t.Helper()
	files := []string{filepath.Join(root, "README.md"), filepath.Join(root, "BENCHMARKS.md")}
	err := filepath.WalkDir(filepath.Join(root, "docs"), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".md") {
			files = append(files, p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

var (
	linkRE    = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	headingRE = regexp.MustCompile(`(?m)^#{1,6} (.+)$`)
	fenceRE   = regexp.MustCompile("(?ms)^```.*?^```")
)

// anchors are the ids GitHub gives a page's headings: lower case, spaces
// to '-', everything but letters, digits, '-' and '_' dropped, repeats
// numbered.
func anchors(text string) map[string]bool {
	text = fenceRE.ReplaceAllString(text, "")
	ids := map[string]bool{}
	seen := map[string]int{}
	for _, m := range headingRE.FindAllStringSubmatch(text, -1) {
		var b strings.Builder
		for _, r := range strings.ToLower(strings.TrimSpace(m[1])) {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
				b.WriteRune(r)
			}
		}
		id := b.String()
		if n := seen[id]; n > 0 {
			ids[id+"-"+strconv.Itoa(n)] = true
		} else {
			ids[id] = true
		}
		seen[id]++
	}
	return ids
}

// TestLinks: every relative link in README.md, BENCHMARKS.md and docs/
// names a file or directory of the repository, and its #anchor a heading
// of that page.
func TestLinks(t *testing.T) {
	n := 0
	for _, file := range markdownFiles(t) {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		text := fenceRE.ReplaceAllString(string(b), "")
		for _, m := range linkRE.FindAllStringSubmatch(text, -1) {
			link := m[1]
			if strings.Contains(link, "://") || strings.HasPrefix(link, "mailto:") {
				continue
			}
			n++
			path, anchor, _ := strings.Cut(link, "#")
			target := file
			if path != "" {
				target = filepath.Join(filepath.Dir(file), path)
			}
			if _, err := os.Stat(target); err != nil {
				t.Errorf("%s: link %q: %v", file, link, err)
				continue
			}
			if anchor == "" {
				continue
			}
			tb, err := os.ReadFile(target)
			if err != nil {
				t.Errorf("%s: link %q: %v", file, link, err)
				continue
			}
			if !anchors(string(tb))[anchor] {
				t.Errorf("%s: link %q: %s has no heading with the anchor #%s", file, link, target, anchor)
			}
		}
	}
	if n < 20 {
		t.Errorf("only %d relative links checked", n)
	}
}

// TestReadmeShort: the README is the front door, under 300 lines; the
// rest lives in docs/.
func TestReadmeShort(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), "\n"); n >= 300 {
		t.Errorf("README.md has %d lines; keep it under 300 and move detail into docs/", n)
	}
}

// TestExitStatusDoc: docs/exit-status.md has a row for every exit status
// internal/exitcode declares, and no other.
func TestExitStatusDoc(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(root, "internal", "exitcode", "exitcode.go"), nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	codes := map[string]string{}
	ast.Inspect(f, func(n ast.Node) bool {
		if vs, ok := n.(*ast.ValueSpec); ok && len(vs.Values) == len(vs.Names) {
			for i, v := range vs.Values {
				if lit, ok := v.(*ast.BasicLit); ok && lit.Kind == token.INT {
					codes[lit.Value] = vs.Names[i].Name
				}
			}
		}
		return true
	})
	if len(codes) < 4 {
		t.Fatalf("%d exit codes found in internal/exitcode", len(codes))
	}
	doc, err := os.ReadFile(filepath.Join(root, "docs", "exit-status.md"))
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^\| (\d+) \|`).FindAllStringSubmatch(string(doc), -1) {
		rows[m[1]] = true
	}
	for v, name := range codes {
		if !rows[v] {
			t.Errorf("docs/exit-status.md has no row for exit status %s (exitcode.%s)", v, name)
		}
	}
	for v := range rows {
		if codes[v] == "" {
			t.Errorf("docs/exit-status.md documents exit status %s, which internal/exitcode does not declare", v)
		}
	}
}

// TestDocsIndexed: README.md links every page of docs/, so none is lost.
func TestDocsIndexed(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	pages, _ := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if len(pages) < 15 {
		t.Fatalf("%d pages in docs/", len(pages))
	}
	for _, p := range pages {
		rel := "docs/" + filepath.Base(p)
		if !strings.Contains(string(readme), "]("+rel+")") {
			t.Errorf("README.md does not link %s", rel)
		}
	}
}
