package cli

import (
	"fmt"
	"sort"
	"strings"
)

// ArgKind is what a flag's argument completes to.
func (s *Spec) ArgKind(f Flag) string {
	if _, ok := s.Values[f.Name]; ok {
		return "words"
	}
	switch strings.ToUpper(f.Arg) {
	case "FILE":
		return "file"
	case "DIR":
		return "dir"
	case "IFACE", "INTERFACE":
		return "iface"
	case "FIELD", "FILTER":
		return "fields"
	}
	return "none"
}

func (s *Spec) operands() string {
	if s.Operands == "" {
		return "file"
	}
	return s.Operands
}

// fnName is the completion function's name.
func (s *Spec) fnName() string { return "_iwkit_" + strings.ReplaceAll(s.Name, "-", "_") }

// Bash is the command's bash completion script (docs/completion/bash/NAME,
// the name bash-completion loads it by).
func (s *Spec) Bash() string {
	var b strings.Builder
	fmt.Fprintf(&b, "# bash completion for %s. Generated from cmd/%s's flags by internal/cli; do not edit.\n", s.Name, s.Name)
	fmt.Fprintf(&b, "# Install: install -Dm644 docs/completion/bash/%s -t ~/.local/share/bash-completion/completions\n", s.Name)
	fn := s.fnName()
	fmt.Fprintf(&b, "%s() {\n", fn)
	b.WriteString("\tlocal cur=${COMP_WORDS[COMP_CWORD]} prev=\n")
	b.WriteString("\t((COMP_CWORD > 0)) && prev=${COMP_WORDS[COMP_CWORD-1]}\n")
	b.WriteString("\tCOMPREPLY=()\n")
	fmt.Fprintf(&b, "\tlocal fields=%s\n", shQuote(strings.Join(s.FieldNames, " ")))
	var flags []string
	groups := map[string][]string{}
	for _, f := range s.Flags {
		flags = append(flags, Dash(f.Name))
		if f.Arg == "" {
			continue
		}
		k := s.ArgKind(f)
		pat := "-" + f.Name + "|--" + f.Name
		if k == "words" {
			k = "words:" + f.Name
		}
		groups[k] = append(groups[k], pat)
	}
	b.WriteString("\tcase $prev in\n")
	keys := make([]string, 0, len(groups))
	for k := range groups {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(&b, "\t%s)\n\t\t%s\n\t\treturn ;;\n", strings.Join(groups[k], "|"), s.bashReply(k))
	}
	b.WriteString("\tesac\n")
	fmt.Fprintf(&b, "\tif [[ $cur == -* ]]; then\n\t\tCOMPREPLY=($(compgen -W %s -- \"$cur\"))\n\t\treturn\n\tfi\n", shQuote(strings.Join(flags, " ")))
	op := s.operands()
	if op == "words" {
		op = "words:"
	}
	fmt.Fprintf(&b, "\t%s\n}\n", s.bashReply(op))
	fmt.Fprintf(&b, "complete -o filenames -o bashdefault -F %s %s\n", fn, s.Name)
	return b.String()
}

// bashReply is the statement that fills COMPREPLY for an argument kind.
func (s *Spec) bashReply(kind string) string {
	switch {
	case kind == "file":
		return `COMPREPLY=($(compgen -f -- "$cur"))`
	case kind == "dir":
		return `COMPREPLY=($(compgen -d -- "$cur"))`
	case kind == "iface":
		return `COMPREPLY=($(compgen -W "any $(ls /sys/class/net 2>/dev/null)" -- "$cur"))`
	case kind == "fields":
		return `COMPREPLY=($(compgen -W "$fields" -- "$cur"))`
	case kind == "dir-fields":
		return `COMPREPLY=($(compgen -d -- "$cur") $(compgen -W "$fields" -- "$cur"))`
	case strings.HasPrefix(kind, "words:"):
		ws := s.Values[strings.TrimPrefix(kind, "words:")]
		words := shQuote(strings.Join(ws, " "))
		if commaFree(ws) {
			// A comma-separated list (-z conv,ops) completes its last item.
			return `local pre=; [[ $cur == *,* ]] && pre=${cur%,*},; COMPREPLY=($(compgen -P "$pre" -W ` + words + ` -- "${cur##*,}"))`
		}
		return `COMPREPLY=($(compgen -W ` + words + ` -- "$cur"))`
	}
	return "return"
}

// Zsh is the command's zsh completion function (docs/completion/zsh/_NAME,
// found through fpath).
func (s *Spec) Zsh() string {
	var b strings.Builder
	fmt.Fprintf(&b, "#compdef %s\n", s.Name)
	fmt.Fprintf(&b, "# zsh completion for %s. Generated from cmd/%s's flags by internal/cli; do not edit.\n", s.Name, s.Name)
	fmt.Fprintf(&b, "# Install: install -Dm644 docs/completion/zsh/_%s -t ~/.local/share/zsh/site-functions (a directory in $fpath)\n", s.Name)
	b.WriteString("_arguments -S \\\n")
	for _, f := range s.Flags {
		spec := "'" + Dash(f.Name) + "[" + zshDesc(f.Usage) + "]"
		if f.Arg != "" {
			spec += ":" + zshDesc(f.Arg) + ":" + s.zshAction(s.ArgKind(f), f.Name)
		}
		spec += "'"
		fmt.Fprintf(&b, "\t%s \\\n", spec)
	}
	fmt.Fprintf(&b, "\t'*:argument:%s'\n", s.zshAction(s.operands(), ""))
	return b.String()
}

func (s *Spec) zshAction(kind, name string) string {
	switch kind {
	case "file":
		return "_files"
	case "dir":
		return "_files -/"
	case "iface":
		return "_net_interfaces"
	case "fields":
		return "(" + zshWords(s.FieldNames) + ")"
	case "dir-fields":
		return `_alternative "dirs:directory:_files -/" "fields:field:(` + zshWords(s.FieldNames) + `)"`
	case "words":
		if !commaFree(s.Values[name]) {
			return "(" + zshWords(s.Values[name]) + ")"
		}
		return "_sequence compadd - " + zshWords(s.Values[name])
	}
	return " "
}

func zshWords(ws []string) string {
	q := make([]string, len(ws))
	for i, w := range ws {
		q[i] = strings.NewReplacer("'", "", " ", "\\ ", "(", "\\(", ")", "\\)").Replace(w)
	}
	return strings.Join(q, " ")
}

// zshDesc makes text safe inside a single-quoted _arguments spec and its
// [description] or :message: brackets and colons are escaped, quotes
// dropped.
func zshDesc(s string) string {
	if i := strings.Index(s, "; "); i > 0 && len(s) > 100 {
		s = s[:i]
	}
	return strings.NewReplacer("'", "", "[", "\\[", "]", "\\]", ":", "\\:").Replace(s)
}

func commaFree(ws []string) bool {
	for _, w := range ws {
		if strings.Contains(w, ",") {
			return false
		}
	}
	return true
}

func shQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
