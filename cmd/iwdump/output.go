package main

import (
	"bufio"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/iwkit/iwkit/decode"
	"github.com/iwkit/iwkit/pcap"
	"github.com/iwkit/iwkit/reassembly"
	"github.com/iwkit/iwkit/track"
)

type endpoint = netip.AddrPort

// printer writes PDUs in the chosen output format.
type printer struct {
	w     *bufio.Writer
	o     *options
	buf   []byte
	worst int // highest severity rank of the findings raised (-1: none)
}

func appendSeconds(b []byte, d time.Duration) []byte {
	return strconv.AppendFloat(b, d.Seconds(), 'f', 6, 64)
}

// head appends the fields every line starts with: frame, time, addresses.
func (p *printer) head(b []byte, frame int, rel time.Duration, src, dst endpoint) []byte {
	b = strconv.AppendInt(b, int64(frame), 10)
	b = append(b, ' ')
	b = appendSeconds(b, rel)
	b = append(b, ' ')
	b = src.AppendTo(b)
	b = append(b, " > "...)
	b = dst.AppendTo(b)
	return append(b, ": "...)
}

// jsonHead opens an NDJSON object with the keys every object has.
func (p *printer) jsonHead(b []byte, frame int, rel time.Duration, c *reassembly.Conn, d reassembly.Dir, src, dst endpoint) []byte {
	b = append(b, `{"frame":`...)
	b = strconv.AppendInt(b, int64(frame), 10)
	b = append(b, `,"time":`...)
	b = appendSeconds(b, rel)
	b = append(b, `,"conn":`...)
	b = strconv.AppendUint(b, c.ID, 10)
	b = append(b, `,"dir":"`...)
	b = append(b, dirName(c, d)...)
	b = append(b, `","src":"`...)
	b = src.AppendTo(b)
	b = append(b, `","dst":"`...)
	b = dst.AppendTo(b)
	return append(b, '"')
}

func (p *printer) pdu(frame int, rel time.Duration, c *reassembly.Conn, d reassembly.Dir, src, dst endpoint, e *reassembly.PDUEvent) {
	pdu := &e.PDU
	if p.o.quiet || p.o.filter != nil && !p.o.filter.Match(&record{pdu: pdu}) {
		return
	}
	b := p.buf[:0]
	if p.o.format == "json" {
		b = p.jsonHead(b, frame, rel, c, d, src, dst)
		if e.Missing > 0 {
			b = append(b, `,"missing":`...)
			b = strconv.AppendInt(b, int64(e.Missing), 10)
		}
		b = appendJSONFields(b, pdu, p.o.numeric)
		b = append(b, "}\n"...)
	} else {
		b = p.head(b, frame, rel, src, dst)
		b = pdu.AppendSummary(b)
		if e.Missing > 0 {
			b = append(b, ", "...)
			b = strconv.AppendInt(b, int64(e.Missing), 10)
			b = append(b, " octets not captured"...)
		}
		b = append(b, '\n')
		if p.o.verbose {
			b = appendTree(b, pdu, p.o.numeric)
		}
		if p.o.hex {
			b = appendHexDump(b, e.Wire)
		}
	}
	p.buf = b
	p.w.Write(b)
}

// finding prints a tracker finding; c is nil when the connection is unknown.
func (p *printer) finding(frame int, rel time.Duration, f *track.Finding, c *reassembly.Conn) {
	p.worst = max(p.worst, severityRank(f.Severity.String()))
	if p.o.quiet || p.o.filter != nil && !p.o.filter.Match(&record{finding: f}) {
		return
	}
	var src, dst endpoint
	d := reassembly.DirAB
	if c != nil {
		if trackDir(c, reassembly.DirBA) == f.Dir {
			d = reassembly.DirBA
		}
		src, dst = ends(c, d)
	}
	p.emitFinding(frame, rel, c, d, src, dst, f.Severity.String(), f.Code.String(), f.Message)
}

// event prints a finding (or another non-PDU event) of a connection:
// kind "finding" with severity, code and message.
func (p *printer) event(frame int, rel time.Duration, c *reassembly.Conn, d reassembly.Dir, src, dst endpoint, kind, severity, code, msg string) {
	p.worst = max(p.worst, severityRank(severity))
	if p.o.quiet || p.o.filter != nil && !p.o.filter.Match(&record{finding: &track.Finding{Message: msg}, sev: severity, code: code}) {
		return
	}
	p.emitFinding(frame, rel, c, d, src, dst, severity, code, msg)
}

func (p *printer) emitFinding(frame int, rel time.Duration, c *reassembly.Conn, d reassembly.Dir, src, dst endpoint, severity, code, msg string) {
	b := p.buf[:0]
	if p.o.format == "json" {
		if c != nil {
			b = p.jsonHead(b, frame, rel, c, d, src, dst)
		} else {
			b = append(b, `{"frame":`...)
			b = strconv.AppendInt(b, int64(frame), 10)
		}
		b = append(b, `,"finding":{"severity":`...)
		b = strconv.AppendQuote(b, severity)
		b = append(b, `,"code":`...)
		b = strconv.AppendQuote(b, code)
		b = append(b, `,"message":`...)
		b = strconv.AppendQuote(b, msg)
		b = append(b, "}}\n"...)
	} else {
		b = p.head(b, frame, rel, src, dst)
		b = append(b, "** "...)
		b = append(b, severity...)
		b = append(b, ' ')
		b = append(b, code...)
		b = append(b, ": "...)
		b = append(b, msg...)
		b = append(b, '\n')
	}
	p.buf = b
	p.w.Write(b)
}

// note prints a line about a frame that holds no decodable PDU.
func (p *printer) note(fr *pcap.Frame, rel time.Duration, msg string) {
	if p.o.quiet {
		return
	}
	if p.o.format == "json" {
		b := append(p.buf[:0], `{"frame":`...)
		b = strconv.AppendInt(b, int64(fr.Number), 10)
		b = append(b, `,"note":`...)
		b = strconv.AppendQuote(b, msg)
		b = append(b, "}\n"...)
		p.buf = b
		p.w.Write(b)
		return
	}
	b := strconv.AppendInt(p.buf[:0], int64(fr.Number), 10)
	b = append(b, ' ')
	b = appendSeconds(b, rel)
	b = append(b, " ["...)
	b = append(b, msg...)
	b = append(b, "]\n"...)
	p.buf = b
	p.w.Write(b)
}

// appendTree writes every field the PDU carries, one per line, indented
// by its depth in the dotted name, with the field's description.
func appendTree(b []byte, p *decode.PDU, numeric bool) []byte {
	fields := decode.Fields()
	m := decode.Present(p)
	for i := range fields {
		f := &fields[i]
		v, ok := f.GetIn(p, m)
		if !ok || f.Name == "data" {
			continue
		}
		depth := strings.Count(f.Name, ".")
		for j := 0; j < depth; j++ {
			b = append(b, "    "...)
		}
		b = append(b, f.Name...)
		b = append(b, " = "...)
		if numeric && v.Kind == decode.KindEnum {
			v.Kind = decode.KindUint
		}
		b = f.AppendValue(b, v)
		b = append(b, "  ("...)
		b = append(b, f.Desc...)
		b = append(b, ")\n"...)
	}
	return b
}

const hexDigits = "0123456789abcdef"

// appendHexDump writes octets as tcpdump -x does, 16 per line with offsets,
// plus the printable characters.
func appendHexDump(b []byte, data []byte) []byte {
	for off := 0; off < len(data); off += 16 {
		line := data[off:min(off+16, len(data))]
		b = append(b, "\t0x"...)
		for s := 12; s >= 0; s -= 4 {
			b = append(b, hexDigits[(off>>s)&0xF])
		}
		b = append(b, ": "...)
		for i := 0; i < 16; i++ {
			if i < len(line) {
				b = append(b, hexDigits[line[i]>>4], hexDigits[line[i]&0xF])
			} else {
				b = append(b, "  "...)
			}
			if i%2 == 1 {
				b = append(b, ' ')
			}
		}
		b = append(b, ' ')
		for _, c := range line {
			if c < 0x20 || c > 0x7e {
				c = '.'
			}
			b = append(b, c)
		}
		b = append(b, '\n')
	}
	return b
}

// jsonObj is an object of the nested JSON: "mpa", "rdmap.term", ...
type jsonObj struct {
	parent int    // index of the enclosing object; -1 for top level
	depth  int    // 1 for "mpa"
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
		objs = append(objs, jsonObj{parent: parent, depth: len(path), open: `,"` + path[len(path)-1] + `":{`})
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
// those octets and the values.
type jsonPlan struct {
	fields []int32  // indexes into jsonFields
	pre    [][]byte // octets before each field's value
	end    []byte   // closing braces
}

// jsonPlans caches the plans by mask; there are a few dozen kinds of PDU.
var jsonPlans = map[decode.Mask]*jsonPlan{}

func planFor(pdu *decode.PDU, m decode.Mask) *jsonPlan {
	if pl, ok := jsonPlans[m]; ok {
		return pl
	}
	pl := &jsonPlan{}
	cur := -1 // innermost open object
	var chain [8]int
	first := false // the next member is the first of its object
	for i := range jsonFields {
		jf := &jsonFields[i]
		if _, ok := jf.f.GetIn(pdu, m); !ok {
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
	if len(jsonPlans) < 4096 { // masks are bounded; this only guards memory
		jsonPlans[m] = pl
	}
	return pl
}

// appendJSONFields writes the fields p carries as nested members.
func appendJSONFields(b []byte, pdu *decode.PDU, numeric bool) []byte {
	m := decode.Present(pdu)
	pl := planFor(pdu, m)
	for k, i := range pl.fields {
		jf := &jsonFields[i]
		v, _ := jf.f.GetIn(pdu, m)
		b = append(b, pl.pre[k]...)
		if numeric && v.Kind == decode.KindEnum {
			v.Kind = decode.KindUint
		}
		switch v.Kind {
		case decode.KindBool:
			if v.U != 0 {
				b = append(b, "true"...)
			} else {
				b = append(b, "false"...)
			}
		case decode.KindUint:
			b = strconv.AppendUint(b, v.U, 10)
		case decode.KindEnum: // static names: plain ASCII, nothing to escape
			b = append(b, '"')
			b = append(b, v.S...)
			b = append(b, '"')
		case decode.KindString:
			b = strconv.AppendQuote(b, v.S)
		case decode.KindBytes:
			b = append(b, '"')
			b = jf.f.AppendValue(b, v)
			b = append(b, '"')
		}
	}
	return append(b, pl.end...)
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
