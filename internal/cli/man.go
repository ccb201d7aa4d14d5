package cli

import (
	"fmt"
	"strings"
)

// Man is the command's manual page (man(7) macros), in the sections
// tcpdump's and tshark's pages have: NAME, SYNOPSIS, DESCRIPTION, OPTIONS,
// EXAMPLES, EXIT STATUS, SEE ALSO.
func (s *Spec) Man() string {
	var b strings.Builder
	up := strings.ToUpper(s.Name)
	fmt.Fprintf(&b, ".\\\" Generated from cmd/%s's flags and its cli.Command by internal/cli; do not edit.\n", s.Name)
	fmt.Fprintf(&b, ".\\\" Regenerate: docs/generate.sh (or go generate ./cmd/%s).\n", s.Name)
	fmt.Fprintf(&b, ".TH %s 1 \"\" \"iwkit\" \"iwkit manual\"\n", up)
	b.WriteString(".SH NAME\n")
	fmt.Fprintf(&b, "%s \\- %s\n", s.Name, roff(s.Summary))
	// Each usage line filled, left-adjusted, unhyphenated, its
	// continuation lines indented under its first argument.
	fmt.Fprintf(&b, ".SH SYNOPSIS\n.nh\n.ad l\n.in +%dn\n", len(s.Name)+1)
	for i, l := range s.Synopsis {
		name, rest, _ := strings.Cut(l, " ")
		if i > 0 {
			b.WriteString(".br\n")
		}
		fmt.Fprintf(&b, ".ti -%dn\n\\fB%s\\fR %s\n", len(s.Name)+1, roff(name), roff(rest))
	}
	b.WriteString(".in\n.ad\n.hy\n.SH DESCRIPTION\n")
	for i, p := range paragraphs(s.Description) {
		if i > 0 {
			b.WriteString(".PP\n")
		}
		b.WriteString(roffText(p) + "\n")
	}
	b.WriteString(".SH OPTIONS\n")
	for _, f := range s.Flags {
		b.WriteString(".TP\n")
		if f.Arg == "" {
			fmt.Fprintf(&b, "\\fB%s\\fR\n", roff(Dash(f.Name)))
		} else {
			fmt.Fprintf(&b, "\\fB%s\\fR \\fI%s\\fR\n", roff(Dash(f.Name)), roff(f.Arg))
		}
		text := f.Usage
		if f.Default != "" {
			text += " (default " + f.Default + ")"
		}
		b.WriteString(roffText(text) + "\n")
	}
	if s.FooterText != "" {
		b.WriteString(".PP\n.nf\n")
		for _, l := range strings.Split(strings.TrimRight(s.FooterText, "\n"), "\n") {
			b.WriteString(roffLine(l) + "\n")
		}
		b.WriteString(".fi\n")
	}
	if len(s.Examples) > 0 {
		b.WriteString(".SH EXAMPLES\n")
		for _, e := range s.Examples {
			fmt.Fprintf(&b, ".PP\n%s\n.RS\n.nf\n\\fB%s\\fR\n.fi\n.RE\n", roffText(e.Text), roff(e.Cmd))
		}
	}
	if len(s.Exit) > 0 {
		b.WriteString(".SH EXIT STATUS\n")
		for _, e := range s.Exit {
			fmt.Fprintf(&b, ".TP\n.B %d\n%s\n", e.Code, roffText(e.Text))
		}
	}
	if len(s.SeeAlso) > 0 {
		b.WriteString(".SH SEE ALSO\n")
		var refs []string
		for _, r := range s.SeeAlso {
			name, sec, ok := strings.Cut(r, "(")
			if ok {
				refs = append(refs, fmt.Sprintf("\\fB%s\\fR(%s", roff(name), roff(sec)))
			} else {
				refs = append(refs, roff(r))
			}
		}
		b.WriteString(strings.Join(refs, ",\n") + "\n")
	}
	return b.String()
}

func paragraphs(s string) []string {
	var out []string
	for _, p := range strings.Split(strings.TrimSpace(s), "\n\n") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, strings.Join(strings.Fields(p), " "))
		}
	}
	return out
}

// roff escapes s for use inside a line: backslashes, hyphens (minus signs
// in flags and code), and characters beyond ASCII as \[uXXXX], so that
// groff needs no input encoding.
func roff(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '\\':
			b.WriteString("\\e")
		case r == '-':
			b.WriteString("\\-")
		case r == '\'':
			b.WriteString("\\(aq")
		case r == '`':
			b.WriteString("\\(ga")
		case r > 126:
			fmt.Fprintf(&b, "\\[u%04X]", r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// roffLine is roff for a whole input line: one that would start with a
// control character is protected with \&.
func roffLine(s string) string {
	e := roff(s)
	if strings.HasPrefix(e, ".") || strings.HasPrefix(e, "'") {
		e = "\\&" + e
	}
	return e
}

// roffText is a paragraph: one sentence per line would be nicer to groff,
// but one line filled by groff renders the same.
func roffText(s string) string { return roffLine(s) }
