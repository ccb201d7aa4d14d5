package cli

import (
	"fmt"
	"io"
	"strings"
)

// Glossary is a field list as tshark -G fields writes it (iwdump -G
// fields: render.WriteGlossary): P lines per protocol, F lines per field
// (description, name, type, protocol, base, bit mask).
type Glossary []GlossaryField

// GlossaryField is one F line.
type GlossaryField struct{ Desc, Name, Type, Proto, Base string }

// ReadGlossary reads what write writes.
func ReadGlossary(write func(io.Writer)) Glossary {
	var b strings.Builder
	write(&b)
	var g Glossary
	for _, l := range strings.Split(b.String(), "\n") {
		c := strings.Split(l, "\t")
		if len(c) >= 6 && c[0] == "F" {
			g = append(g, GlossaryField{Desc: c[1], Name: c[2], Type: c[3], Proto: c[4], Base: c[5]})
		}
	}
	return g
}

// Names are the fields' names, in order.
func (g Glossary) Names() []string {
	n := make([]string, len(g))
	for i, f := range g {
		n[i] = f.Name
	}
	return n
}

// Markers around docs/fields.md's generated list.
const (
	FieldsBegin = "<!-- fields: generated from iwdump -G fields (render.WriteGlossary: decode and ulp field tables); do not edit; docs/generate.sh rewrites it -->\n"
	FieldsEnd   = "<!-- end of fields -->\n"
)

// Markdown is docs/fields.md's list: a table per protocol.
func (g Glossary) Markdown() string {
	var b strings.Builder
	proto := ""
	for _, f := range g {
		if f.Proto != proto {
			proto = f.Proto
			fmt.Fprintf(&b, "\n### `%s`\n\n| field | type | base | description |\n|---|---|---|---|\n", proto)
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", f.Name, f.Type, f.Base, mdCell(f.Desc))
	}
	return strings.TrimPrefix(b.String(), "\n")
}
