package main

import (
	"encoding/json"
	"math/rand/v2"
	"testing"
	"unicode/utf8"
)

func TestAppendJSONString(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"", `""`},
		{"MPA ID Req Frame", `"MPA ID Req Frame"`},
		{`say "hi" \ bye`, `"say \"hi\" \\ bye"`},
		{"a\nb\rc\td", `"a\nb\rc\td"`},
		{"\x00\x01\x07\x08\x0c\x1f", `"\u0000\u0001\u0007\u0008\u000c\u001f"`},
		{"\x7f", "\"\x7f\""},
		{"é ☃ 😀 \ufffd", "\"é ☃ 😀 \ufffd\""},
		{"bad \xff\xfe end", `"bad \ufffd\ufffd end"`},
		{"cut \xe2\x98", `"cut \ufffd\ufffd"`},
		{"surrogate \xed\xa0\x80", `"surrogate \ufffd\ufffd\ufffd"`},
		{"\u2028", "\"\u2028\""},
	} {
		if got := string(appendJSONString([]byte("x"), c.in)); got != "x"+c.want {
			t.Errorf("appendJSONString(%q) = %s, want %s", c.in, got[1:], c.want)
		}
	}
}

// checkJSONString: the result is valid JSON and decodes to s, with each
// octet that is not UTF-8 read as U+FFFD (as ranging over s does).
func checkJSONString(t *testing.T, s string) {
	t.Helper()
	b := appendJSONString(nil, s)
	if !json.Valid(b) {
		t.Fatalf("appendJSONString(%q) = %s: not valid JSON", s, b)
	}
	var got string
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatalf("appendJSONString(%q) = %s: %v", s, b, err)
	}
	want := s
	if !utf8.ValidString(s) {
		want = string([]rune(s))
	}
	if got != want {
		t.Fatalf("appendJSONString(%q) = %s decodes to %q", s, b, got)
	}
}

// Random strings drawn from the octets and runes that need care.
func TestAppendJSONStringRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	pieces := []string{"a", "Z", " ", `"`, `\`, "/", "\x00", "\x1f", "\n", "\x7f", "\x80", "\xff", "\xc3", "é", "€", "😀",
		"\ufffd", "\u2028", "\xed\xa0\x80", "\xf0\x9f"}
	for range 20000 {
		var s []byte
		for range r.IntN(12) {
			if r.IntN(4) == 0 {
				s = append(s, byte(r.IntN(256)))
			} else {
				s = append(s, pieces[r.IntN(len(pieces))]...)
			}
		}
		checkJSONString(t, string(s))
	}
}

func FuzzAppendJSONString(f *testing.F) {
	for _, s := range []string{"", "plain", `"\`, "\x00\n\x7f", "é😀", "\xff", "\xe2\x98", "\xed\xa0\x80"} {
		f.Add(s)
	}
	f.Fuzz(checkJSONString)
}
