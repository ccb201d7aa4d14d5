package cli

import (
	"fmt"
	"strings"
)

// Markers around the generated block of a docs page.
const (
	OptionsBegin = "<!-- options: generated from the command's flags (internal/cli); do not edit; docs/generate.sh rewrites it -->\n"
	OptionsEnd   = "<!-- end of options -->\n"
)

// Markdown is the options block of docs/NAME.md: the synopsis and a table
// of every flag, as --help lists them.
func (s *Spec) Markdown() string {
	var b strings.Builder
	b.WriteString("```\n")
	for _, l := range s.Synopsis {
		b.WriteString(l + "\n")
	}
	b.WriteString("```\n\n| option | meaning | default |\n|---|---|---|\n")
	for _, f := range s.Flags {
		def := ""
		if f.Default != "" {
			def = "`" + f.Default + "`"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s |\n", FlagTerm(f), mdCell(f.Usage), mdCell(def))
	}
	if s.FooterText != "" {
		b.WriteString("\n```\n" + s.FooterText + "```\n")
	}
	return b.String()
}

func mdCell(s string) string {
	s = strings.ReplaceAll(s, "|", "\\|")
	return strings.ReplaceAll(s, "\n", " ")
}
