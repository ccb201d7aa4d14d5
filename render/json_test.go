package render

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/iwkit/iwkit/decode"
	"github.com/iwkit/iwkit/gen"
)

// checkFastPDU compares the specialized encoder with the table walk on
// one PDU, with named and numeric values, and reports whether the fast
// path took it.
func checkFastPDU(t *testing.T, what string, p *decode.PDU) bool {
	t.Helper()
	for _, numeric := range []bool{false, true} {
		fast := AppendJSONFields([]byte(`{"x":0`), p, numeric)
		generic := appendJSONFieldsGeneric([]byte(`{"x":0`), p, numeric)
		if !bytes.Equal(fast, generic) {
			t.Fatalf("%s (numeric %v):\n fast    %s\n generic %s", what, numeric, fast, generic)
		}
		if obj := append(fast, '}'); !json.Valid(obj) {
			t.Fatalf("%s (numeric %v): invalid JSON %s", what, numeric, obj)
		}
	}
	return planFor(decode.Present(p)).fast != nil
}

// checkFastPDUs runs checkFastPDU over a capture's PDUs and checks the
// fast path covers all but MPA frames and Terminates.
func checkFastPDUs(t *testing.T, pdus []decode.PDU) {
	t.Helper()
	if len(pdus) == 0 {
		t.Fatal("no PDUs")
	}
	fast := 0
	for i := range pdus {
		p := &pdus[i]
		if checkFastPDU(t, "PDU "+strconv.Itoa(i), p) {
			fast++
		} else if !p.IsMPAFrame && !carries(p, "rdmap.term.layer") {
			t.Errorf("PDU %d (%s) takes the generic walk", i, p.AppendSummary(nil))
		}
	}
	t.Logf("%d PDUs, %d on the fast path", len(pdus), fast)
}

// carries reports whether p has the named field.
func carries(p *decode.PDU, name string) bool {
	f, ok := decode.FieldByName(name)
	return ok && f.In(decode.Present(p))
}

// Every PDU of every committed capture.
func TestJSONFastMatchesGeneric(t *testing.T) {
	for _, name := range testdataCaptures(t) {
		t.Run(strings.TrimPrefix(name, "../testdata/"), func(t *testing.T) {
			f, err := os.Open(name)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			checkFastPDUs(t, readPDUs(t, f))
		})
	}
}

// Every PDU of every built-in iwgen scenario: all opcodes, every
// Terminate cause, impairments.
func TestJSONFastMatchesGenericGenerated(t *testing.T) {
	for _, b := range gen.Builtins() {
		t.Run(b[0], func(t *testing.T) {
			checkFastPDUs(t, readPDUs(t, generatedCapture(t, b[0], gen.Params{Count: 3, Seed: 7})))
		})
	}
}

// FuzzJSONFast decodes octets as a DDP segment in an FPDU, with a CRC
// verdict and markers, and compares the encoders: arbitrary header values
// and opcodes in either buffer model, and cut segments.
func FuzzJSONFast(f *testing.F) {
	f.Add([]byte{0xc1, 0x40, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0}, uint8(2), uint8(0))
	f.Add([]byte{0x41, 0x41, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}, uint8(3), uint8(1))
	f.Add([]byte{0x41, 0x4a, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0}, uint8(0), uint8(0))
	f.Add([]byte{0x41}, uint8(1), uint8(2))
	f.Fuzz(func(t *testing.T, seg []byte, crc, markers uint8) {
		var p decode.PDU
		p.FPDU.ULPDU = seg
		p.FPDU.ULPDULength = uint16(len(seg))
		p.FPDU.Pad = seg[:min(len(seg), int(markers%4))]
		p.FPDU.CRC, p.ComputedCRC = uint32(len(seg))*0x01000193, uint32(crc)<<24
		p.CRCStatus = decode.CRCStatus(crc % 5)
		p.Markers = make([]decode.MarkerAt, markers%3)
		p.SegErr = decode.ParseSegment(seg, &p.Seg)
		checkFastPDU(t, "fuzzed PDU", &p)
	})
}

// Printers of several shards encode at once; with -race this checks the
// plan cache, starting empty so that the goroutines add plans together;
// each writes what one goroutine alone writes.
func TestJSONFieldsConcurrent(t *testing.T) {
	pdus := readPDUs(t, generatedCapture(t, "mixed", gen.Params{Count: 2, Seed: 3}))
	// What one goroutine writes for each PDU, numeric and named.
	var want [2][]string
	for n := range 2 {
		for i := range pdus {
			want[n] = append(want[n], string(AppendJSONFields(nil, &pdus[i], n == 1)))
		}
	}
	saved := jsonPlans.Load()
	jsonPlans.Store(nil) // the plans are built again, by the goroutines at once
	defer jsonPlans.Store(saved)
	var wg sync.WaitGroup
	errs := make(chan string, 4)
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var b []byte
			for i := range pdus {
				j := (i + g*7) % len(pdus)
				b = AppendJSONFields(b[:0], &pdus[j], g%2 == 1)
				if string(b) != want[g%2][j] {
					errs <- fmt.Sprintf("goroutine %d, PDU %d: %s, want %s", g, j, b, want[g%2][j])
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	if len(pdus) < 10 || len(want[0][0]) < 10 {
		t.Fatalf("%d PDUs, the first written as %q", len(pdus), want[0][0])
	}
}

// Every group of the specialized encoder names fields the table has.
func TestJSONFastGroupsResolve(t *testing.T) {
	if len(fastGroups) != len(decode.FieldGroups) {
		t.Fatalf("%d fast groups for %d groups of decode.FieldGroups", len(fastGroups), len(decode.FieldGroups))
	}
	for _, g := range fastGroups {
		if g.fields == nil {
			t.Errorf("fast group %v names a field the table does not have", g.names)
		}
	}
}

// The names the specialized encoder writes fit a chunk, as the room it
// reserves assumes.
func TestJSONFastNamesFit(t *testing.T) {
	for i := range 256 {
		for _, name := range []string{decode.Opcode(i).String(), decode.CRCStatus(i).String(), decode.AtomicOp(i).String()} {
			if len(name)+2 > jsonChunkLen {
				t.Errorf("name %q is longer than a chunk", name)
			}
		}
	}
	if len(opcodeNames) != 16 || len(crcStatusNames) != 4 {
		t.Errorf("%d opcode names, %d CRC status names prepared, want 16, 4", len(opcodeNames), len(crcStatusNames))
	}
}

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
		if got := string(AppendJSONString([]byte("x"), c.in)); got != "x"+c.want {
			t.Errorf("AppendJSONString(%q) = %s, want %s", c.in, got[1:], c.want)
		}
	}
}

// checkJSONString: the result is valid JSON and decodes to s, with each
// octet that is not UTF-8 read as U+FFFD (as ranging over s does).
func checkJSONString(t *testing.T, s string) {
	t.Helper()
	b := AppendJSONString(nil, s)
	if !json.Valid(b) {
		t.Fatalf("AppendJSONString(%q) = %s: not valid JSON", s, b)
	}
	var got string
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatalf("AppendJSONString(%q) = %s: %v", s, b, err)
	}
	want := s
	if !utf8.ValidString(s) {
		want = string([]rune(s))
	}
	if got != want {
		t.Fatalf("AppendJSONString(%q) = %s decodes to %q", s, b, got)
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

// TestJSONWideHex: on every PDU of the built-in scenarios, each 64-bit
// field shown in hex is a JSON string "0x…" that reads back as the field's
// value to the last bit, also past 2^53 where a number would round
// (JSONVersion 2); every other number stays a number.
func TestJSONWideHex(t *testing.T) {
	wide := 0
	for _, b := range gen.Builtins() {
		for _, p := range readPDUs(t, generatedCapture(t, b[0], gen.Params{Count: 2, Seed: 11})) {
			p.Seg.DDP.TO |= 0xff1c000000000000 // past 2^53 in every tagged segment
			obj := append(AppendJSONFields([]byte(`{"x":0`), &p, false), '}')
			var doc map[string]any
			dec := json.NewDecoder(bytes.NewReader(obj))
			dec.UseNumber()
			if err := dec.Decode(&doc); err != nil {
				t.Fatalf("%s: %v", obj, err)
			}
			for i := range jsonFields {
				f := jsonFields[i].f
				v, ok := f.Get(&p)
				if !ok || f.Kind != decode.KindUint {
					continue
				}
				var got any = doc
				for _, k := range strings.Split(f.Name, ".") {
					got = got.(map[string]any)[k]
				}
				if f.JSONHex() {
					s, isStr := got.(string)
					x, err := strconv.ParseUint(strings.TrimPrefix(s, "0x"), 16, 64)
					if !isStr || !strings.HasPrefix(s, "0x") || err != nil || x != v.U {
						t.Fatalf("%s: %v in JSON, value %#x", f.Name, got, v.U)
					}
					wide++
				} else if _, isNum := got.(json.Number); !isNum {
					t.Fatalf("%s: %v is not a number", f.Name, got)
				}
			}
		}
	}
	if wide < 100 {
		t.Fatalf("%d wide hex values checked", wide)
	}
}
