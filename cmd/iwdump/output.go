package main

import (
	"bufio"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/iwkit/iwkit/decode"
	"github.com/iwkit/iwkit/finding"
	"github.com/iwkit/iwkit/pcap"
	"github.com/iwkit/iwkit/reassembly"
	"github.com/iwkit/iwkit/track"
)

type endpoint = netip.AddrPort

// printer writes PDUs in the chosen output format, to w, or with
// --workers to the sink of its shard (shard.go).
type printer struct {
	w     *bufio.Writer
	sink  *shardOut
	o     *options
	buf   []byte
	worst int       // highest severity rank of the findings raised (-1: none)
	base  time.Time // timestamp of the first frame (-t a, ad, e)
	addrs [2]addrText
}

// addrText caches "src > dst: " of a direction: lines of one connection
// follow each other, and formatting addresses is a tenth of a text line.
type addrText struct {
	src, dst endpoint
	text     []byte
}

// write emits a finished record.
func (p *printer) write(b []byte) {
	p.buf = b
	if p.sink != nil {
		p.sink.buf = append(p.sink.buf, b...)
		return
	}
	p.w.Write(b)
}

// appendConn appends a connection number. A shard knows only its own
// numbering: it leaves a place for the merger to write the global one.
func (p *printer) appendConn(b []byte, id uint64) []byte {
	if p.sink != nil {
		p.sink.patches = append(p.sink.patches, connPatch{off: len(p.sink.buf) + len(b), local: id})
		return b
	}
	return strconv.AppendUint(b, id, 10)
}

// appendSeconds writes d in seconds with 6 decimals, as
// strconv.AppendFloat(b, d.Seconds(), 'f', 6, 64) does, in integers: the
// float path costs ~5% of a run. Exact ties (500 ns past a microsecond)
// and values the float cannot hold to the nanosecond take the float path,
// whose rounding they follow.
func appendSeconds(b []byte, d time.Duration) []byte {
	const limit = 1e6 * time.Second
	us, rem := d/time.Microsecond, d%time.Microsecond
	if d < 0 || d >= limit || rem == 500 {
		return strconv.AppendFloat(b, d.Seconds(), 'f', 6, 64)
	}
	if rem > 500 {
		us++
	}
	b = strconv.AppendInt(b, int64(us/1e6), 10)
	return appendMicros(b, int(us%1e6))
}

// appendMicros appends the 6-digit fraction of a second: ".000123".
func appendMicros(b []byte, us int) []byte {
	return append(b, '.', '0'+byte(us/1e5), '0'+byte(us/1e4%10), '0'+byte(us/1e3%10), '0'+byte(us/100%10), '0'+byte(us/10%10), '0'+byte(us%10))
}

// Time formats of -t, as tshark's: seconds since the first frame, time of
// day, date and time (both UTC), seconds since the epoch.
var timeFormats = []string{"r", "a", "ad", "e"}

// appendTime writes the time of a text line, rel after the first frame.
func (p *printer) appendTime(b []byte, rel time.Duration) []byte {
	switch p.o.timeFormat {
	case "a":
		return p.base.Add(rel).UTC().AppendFormat(b, "15:04:05.000000")
	case "ad":
		return p.base.Add(rel).UTC().AppendFormat(b, "2006-01-02 15:04:05.000000")
	case "e":
		t := p.base.Add(rel).Round(time.Microsecond)
		return appendMicros(strconv.AppendInt(b, t.Unix(), 10), t.Nanosecond()/1000)
	}
	return appendSeconds(b, rel)
}

// head appends the fields every line starts with: frame, time, addresses.
func (p *printer) head(b []byte, frame int, rel time.Duration, src, dst endpoint) []byte {
	b = strconv.AppendInt(b, int64(frame), 10)
	b = append(b, ' ')
	b = p.appendTime(b, rel)
	b = append(b, ' ')
	for i := range p.addrs {
		if a := &p.addrs[i]; a.src == src && a.dst == dst && a.text != nil {
			return append(b, a.text...)
		}
	}
	p.addrs[0], p.addrs[1] = p.addrs[1], p.addrs[0] // the older entry goes
	a := &p.addrs[0]
	a.src, a.dst = src, dst
	a.text = src.AppendTo(a.text[:0])
	a.text = append(a.text, " > "...)
	a.text = dst.AppendTo(a.text)
	a.text = append(a.text, ": "...)
	return append(b, a.text...)
}

// jsonHead opens an NDJSON object with the keys every object has.
func (p *printer) jsonHead(b []byte, frame int, rel time.Duration, c *reassembly.Conn, d reassembly.Dir, src, dst endpoint) []byte {
	b = append(b, `{"frame":`...)
	b = strconv.AppendInt(b, int64(frame), 10)
	b = append(b, `,"time":`...)
	b = appendSeconds(b, rel)
	b = append(b, `,"conn":`...)
	b = p.appendConn(b, c.ID)
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
	p.write(b)
}

// finding prints a tracker finding; c is nil when the connection is unknown.
func (p *printer) finding(frame int, rel time.Duration, f *track.Finding, c *reassembly.Conn) {
	p.worst = max(p.worst, int(f.Severity))
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

// event prints a finding of a connection that the reassembler raised,
// with the catalogue's severity for its code.
func (p *printer) event(frame int, rel time.Duration, c *reassembly.Conn, d reassembly.Dir, src, dst endpoint, code finding.Code, msg string) {
	sev := code.Severity()
	p.worst = max(p.worst, int(sev))
	if p.o.quiet || p.o.filter != nil && !p.o.filter.Match(&record{finding: &track.Finding{Severity: sev, Code: code, Message: msg}}) {
		return
	}
	p.emitFinding(frame, rel, c, d, src, dst, sev.String(), code.String(), msg)
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
		b = appendJSONString(b, severity)
		b = append(b, `,"code":`...)
		b = appendJSONString(b, code)
		b = append(b, `,"message":`...)
		b = appendJSONString(b, msg)
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
	p.write(b)
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
		b = appendJSONString(b, msg)
		b = append(b, "}\n"...)
		p.write(b)
		return
	}
	b := strconv.AppendInt(p.buf[:0], int64(fr.Number), 10)
	b = append(b, ' ')
	b = p.appendTime(b, rel)
	b = append(b, " ["...)
	b = append(b, msg...)
	b = append(b, "]\n"...)
	p.write(b)
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
