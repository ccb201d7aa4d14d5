package render

import (
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	"github.com/iwkit/iwkit/decode"
)

// The NDJSON encoding of a PDU's fields: nested objects whose paths are the
// field table's dotted names (docs/json.md).

// JSONVersion is the version of the NDJSON schema (docs/json.md).
// 2: the 64-bit fields shown in hex (decode.Field.JSONHex: TOs, addresses,
// atomic operands) are strings "0x…", no longer numbers.
const JSONVersion = 2

// jsonObj is an object of the nested JSON: "mpa", "rdmap.term", ...
type jsonObj struct {
	parent int    // index of the enclosing object; -1 for top level
	open   string // `,"name":{`
}

// jsonField is a field of the table with its place in the nesting worked
// out once.
type jsonField struct {
	f   *decode.Field
	obj int    // enclosing object
	key string // `"leaf":`
}

// The field table keeps every dotted prefix contiguous (decode tests check
// it), so each object opens once. "data", the payload, is left out.
var jsonObjs, jsonFields = func() ([]jsonObj, []jsonField) {
	var objs []jsonObj
	ids := map[string]int{}
	var obj func(path []string) int
	obj = func(path []string) int {
		if len(path) == 0 {
			return -1
		}
		name := strings.Join(path, ".")
		if id, ok := ids[name]; ok {
			return id
		}
		parent := obj(path[:len(path)-1])
		objs = append(objs, jsonObj{parent: parent, open: `,"` + path[len(path)-1] + `":{`})
		ids[name] = len(objs) - 1
		return len(objs) - 1
	}
	var fields []jsonField
	fs := decode.Fields()
	for i := range fs {
		if fs[i].Name == "data" {
			continue
		}
		parts := strings.Split(fs[i].Name, ".")
		fields = append(fields, jsonField{f: &fs[i], obj: obj(parts[:len(parts)-1]), key: strconv.Quote(parts[len(parts)-1]) + ":"})
	}
	return objs, fields
}()

// A jsonPlan is the JSON layout for one set of present fields (one
// decode.Mask): for each field, the octets that go before its value
// (closing and opening objects, comma, key), and what closes the last
// object. PDUs of one kind share a plan, so the per-PDU work is appending
// those octets and the values. A plan whose fields the specialized
// encoder covers (jsonenc_fast.go) also holds its groups.
type jsonPlan struct {
	fields []int32     // indexes into jsonFields
	pre    [][]byte    // octets before each field's value
	end    []byte      // closing braces
	fast   []fastStep  // nil: the generic walk
	keys   []jsonChunk // pre as chunks, for the fast path
	room   int         // octets the fast path reserves
}

// jsonPlans caches the plans by mask; there are a few dozen kinds of PDU.
// Printers may encode concurrently (one per shard with --workers), so a
// published map is never changed: a new plan goes into a copy (once per
// kind of PDU), and a lookup is an atomic load and a map read.
var (
	jsonPlans   atomic.Pointer[map[decode.Mask]*jsonPlan]
	jsonPlansMu sync.Mutex // serializes the copies
)

func planFor(m decode.Mask) *jsonPlan {
	if plans := jsonPlans.Load(); plans != nil {
		if pl, ok := (*plans)[m]; ok {
			return pl
		}
	}
	return addPlan(m)
}

// addPlan builds the plan for m and publishes it in a copy of the cache.
func addPlan(m decode.Mask) *jsonPlan {
	jsonPlansMu.Lock()
	defer jsonPlansMu.Unlock()
	var plans map[decode.Mask]*jsonPlan
	if p := jsonPlans.Load(); p != nil {
		plans = *p
	}
	if pl, ok := plans[m]; ok {
		return pl
	}
	pl := buildPlan(m)
	if len(plans) >= 4096 { // masks are bounded; this only guards memory
		return pl
	}
	next := make(map[decode.Mask]*jsonPlan, len(plans)+1)
	for k, v := range plans {
		next[k] = v
	}
	next[m] = pl
	jsonPlans.Store(&next)
	return pl
}

// buildPlan lays out the fields a PDU with mask m carries.
func buildPlan(m decode.Mask) *jsonPlan {
	pl := &jsonPlan{}
	cur := -1 // innermost open object
	var chain [8]int
	first := false // the next member is the first of its object
	for i := range jsonFields {
		jf := &jsonFields[i]
		if !jf.f.In(m) {
			continue
		}
		var b []byte
		if jf.obj != cur {
			for cur != -1 && !encloses(cur, jf.obj) {
				b = append(b, '}')
				cur = jsonObjs[cur].parent
			}
			n := 0
			for o := jf.obj; o != cur; o = jsonObjs[o].parent {
				chain[n] = o
				n++
			}
			for n > 0 {
				n--
				b = append(b, jsonObjs[chain[n]].open...)
				first = true
			}
			cur = jf.obj
		}
		if !first {
			b = append(b, ',')
		}
		first = false
		b = append(b, jf.key...)
		pl.fields = append(pl.fields, int32(i))
		pl.pre = append(pl.pre, b)
	}
	for ; cur != -1; cur = jsonObjs[cur].parent {
		pl.end = append(pl.end, '}')
	}
	pl.fast = fastGroupsFor(pl)
	return pl
}

// AppendJSONFields writes the fields p carries as nested members: with
// the specialized encoder where it covers the PDU's kind, else by walking
// the field table.
func AppendJSONFields(b []byte, pdu *decode.PDU, numeric bool) []byte {
	m := decode.Present(pdu)
	pl := planFor(m)
	if pl.fast != nil {
		b = pl.appendFast(b, pdu, numeric)
	} else {
		b = pl.appendGeneric(b, pdu, m, numeric)
	}
	return append(b, pl.end...)
}

// appendJSONFieldsGeneric is AppendJSONFields always walking the table:
// the reference the specialized encoder is tested and benchmarked
// against.
func appendJSONFieldsGeneric(b []byte, pdu *decode.PDU, numeric bool) []byte {
	m := decode.Present(pdu)
	pl := planFor(m)
	b = pl.appendGeneric(b, pdu, m, numeric)
	return append(b, pl.end...)
}

// appendGeneric writes the plan's fields through the table's getters.
func (pl *jsonPlan) appendGeneric(b []byte, pdu *decode.PDU, m decode.Mask, numeric bool) []byte {
	for k, i := range pl.fields {
		jf := &jsonFields[i]
		v, _ := jf.f.GetIn(pdu, m)
		b = append(b, pl.pre[k]...)
		if numeric && v.Kind == decode.KindEnum {
			v.Kind = decode.KindUint
		}
		switch v.Kind {
		case decode.KindBool:
			b = appendJSONBool(b, v.U != 0)
		case decode.KindUint:
			if jf.f.JSONHex() {
				b = append(b, '"')
				b = jf.f.AppendValue(b, v)
				b = append(b, '"')
				break
			}
			b = strconv.AppendUint(b, v.U, 10)
		case decode.KindEnum: // static names: plain ASCII, nothing to escape
			b = append(b, '"')
			b = append(b, v.S...)
			b = append(b, '"')
		case decode.KindString:
			b = AppendJSONString(b, v.S)
		case decode.KindBytes:
			b = append(b, '"')
			b = jf.f.AppendValue(b, v)
			b = append(b, '"')
		}
	}
	return b
}

func appendJSONBool(b []byte, x bool) []byte {
	if x {
		return append(b, "true"...)
	}
	return append(b, "false"...)
}

// AppendJSONString appends s as a JSON string (RFC 8259 §7). Unlike
// strconv.Quote, whose \x, \a and \U escapes JSON does not have, it
// escapes only what JSON requires: the quote, the backslash and the
// control characters. Octets that are not UTF-8 become \ufffd, one per
// octet, as ranging over the string decodes them.
func AppendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0 // s[start:i] is still to be copied
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' && c < utf8.RuneSelf {
			i++
			continue
		}
		if c >= utf8.RuneSelf {
			r, size := utf8.DecodeRuneInString(s[i:])
			if r != utf8.RuneError || size > 1 { // valid, U+FFFD included
				i += size
				continue
			}
		}
		b = append(b, s[start:i]...)
		b = appendJSONEscape(b, c)
		i++
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// appendJSONEscape appends the escape for an octet AppendJSONString does
// not copy: a quote, a backslash, a control character or a stray octet.
func appendJSONEscape(b []byte, c byte) []byte {
	const hexDigits = "0123456789abcdef"
	switch {
	case c == '"' || c == '\\':
		return append(b, '\\', c)
	case c == '\n':
		return append(b, `\n`...)
	case c == '\r':
		return append(b, `\r`...)
	case c == '\t':
		return append(b, `\t`...)
	case c < 0x20:
		return append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
	}
	return append(b, `\ufffd`...)
}

// encloses reports whether object anc is obj or one of its ancestors.
func encloses(anc, obj int) bool {
	for ; obj != -1; obj = jsonObjs[obj].parent {
		if obj == anc {
			return true
		}
	}
	return false
}
