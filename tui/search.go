package tui

import (
	"bytes"
	"encoding/hex"
	"regexp"
	"strings"
)

// search is what f looks for, in the list, a view, the tree or the
// octets: text (case-insensitive), a regular expression written /re/, or
// octets written 0x followed by hex digits (spaces and colons allowed:
// 0x00 0a, 0x00:0a). In text (the list, views, the tree) hex octets are
// looked for as their hex digits; in the octets pane text and regular
// expressions match the octets themselves.
type search struct {
	text string         // lower case
	re   *regexp.Regexp // /re/
	hex  []byte         // 0x...
}

// newSearch parses what was typed (nil: nothing to look for, or a bad
// expression, whose error is returned).
func newSearch(s string) *search {
	m, _ := parseSearch(s)
	return m
}

func parseSearch(s string) (*search, error) {
	switch {
	case s == "":
		return nil, nil
	case len(s) >= 2 && s[0] == '/' && s[len(s)-1] == '/':
		re, err := regexp.Compile("(?i)" + s[1:len(s)-1])
		if err != nil {
			return nil, err
		}
		return &search{re: re}, nil
	case len(s) > 2 && (strings.HasPrefix(s, "0x") || strings.HasPrefix(s, "0X")):
		digits := strings.NewReplacer(" ", "", ":", "", "-", "").Replace(s[2:])
		if b, err := hex.DecodeString(digits); err == nil && len(b) > 0 {
			return &search{hex: b, text: strings.ToLower(s)}, nil
		}
	}
	return &search{text: strings.ToLower(s)}, nil
}

// matchString reports whether s holds what is looked for.
func (m *search) matchString(s string) bool {
	switch {
	case m.re != nil:
		return m.re.MatchString(s)
	case m.hex != nil:
		l := strings.ToLower(s)
		return strings.Contains(l, hex.EncodeToString(m.hex)) || strings.Contains(l, m.text)
	}
	return strings.Contains(strings.ToLower(s), m.text)
}

// matchOctets returns the offset and length of the first match in b at
// or after from (-1 if none).
func (m *search) matchOctets(b []byte, from int) (int, int) {
	if from < 0 || from > len(b) {
		return -1, 0
	}
	switch {
	case m.re != nil:
		if loc := m.re.FindIndex(b[from:]); loc != nil && loc[1] > loc[0] {
			return from + loc[0], loc[1] - loc[0]
		}
		return -1, 0
	case m.hex != nil:
		if i := bytes.Index(b[from:], m.hex); i >= 0 {
			return from + i, len(m.hex)
		}
		return -1, 0
	}
	if i := bytes.Index(bytes.ToLower(b[from:]), []byte(m.text)); i >= 0 {
		return from + i, len(m.text)
	}
	return -1, 0
}
