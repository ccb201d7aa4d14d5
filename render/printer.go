package render

import (
	"net/netip"
	"strconv"
	"time"

	"github.com/iwkit/iwkit/analyze"
	"github.com/iwkit/iwkit/filter"
	"github.com/iwkit/iwkit/internal/digits"
)

type endpoint = netip.AddrPort

// Options choose what a Printer writes.
type Options struct {
	Format     string // "text" or "json" (NDJSON, one object per PDU or finding)
	Verbose    bool   // -V: the field tree of every PDU
	Hex        bool   // -x: the PDU's octets in hex
	Numeric    bool   // -n: named values as numbers
	Quiet      bool   // -q: nothing
	TimeFormat string // text lines: r, a, ad, e (TimeFormats)
	// Filter, when set, keeps only the PDUs and findings it matches.
	Filter *filter.Filter[*analyze.Record]
}

// Printer writes records as iwdump prints them: text lines (with -V and
// -x), or NDJSON. It is an analyze.Consumer.
type Printer struct {
	out   *analyze.Out
	o     *Options
	buf   []byte // a record's buffer for -V and -x (see start)
	nodes []Node // -V: the PDU's detail tree
	tree  TreeInput
	addrs [2]addrText
	dirs  [2]dirJSON
}

// New makes a printer writing to out.
func New(out *analyze.Out, o *Options) *Printer { return &Printer{out: out, o: o} }

// addrText caches "src > dst: " of a direction: lines of one connection
// follow each other, and formatting addresses is a tenth of a text line.
type addrText struct {
	src, dst endpoint
	text     []byte
}

// dirJSON caches the keys of an NDJSON object that follow the connection
// number and stay the same in a direction: `,"dir":"i2r","src":"…","dst":"…"`.
type dirJSON struct {
	dir      string // analyze.DirName: the roles may be learnt late
	src, dst endpoint
	text     []byte
}

// Record prints a PDU, a finding or a note; other records print nothing.
func (p *Printer) Record(r *analyze.Record) {
	if p.o.Quiet {
		return
	}
	switch r.Kind {
	case analyze.KindPDU:
		if p.o.Filter == nil || p.o.Filter.Match(r) {
			p.pdu(r)
		}
	case analyze.KindFinding:
		if p.o.Filter == nil || p.o.Filter.Match(r) {
			p.finding(r)
		}
	case analyze.KindNote:
		p.note(r)
	}
}

// start returns the buffer to append a record to: with -V or -x (records
// of kilobytes) the printer's own, else the output's free end
// (analyze.Out.Buf), where a line is written in place.
func (p *Printer) start() []byte {
	if p.o.Verbose || p.o.Hex {
		return p.buf[:0]
	}
	return p.out.Buf()
}

// write emits a finished record.
func (p *Printer) write(b []byte) {
	if p.o.Verbose || p.o.Hex {
		p.buf = b
	}
	p.out.Write(b)
}

// appendSeconds writes d in seconds with 6 decimals (digits.AppendSeconds:
// strconv.AppendFloat's rounding, in integers).
func appendSeconds(b []byte, d time.Duration) []byte { return digits.AppendSeconds(b, d) }

// appendMicros appends the 6-digit fraction of a second: ".000123".
func appendMicros(b []byte, us int) []byte { return digits.AppendMicros(b, us) }

// TimeFormats are those of -t, as tshark's: seconds since the first frame,
// time of day, date and time (both UTC), seconds since the epoch.
var TimeFormats = []string{"r", "a", "ad", "e"}

// appendTime writes the time of a text line.
func (p *Printer) appendTime(b []byte, r *analyze.Record) []byte {
	return AppendTime(b, p.o.TimeFormat, r.Time, r.Rel)
}

// AppendTime writes time t (rel after the first frame) in format (one of
// TimeFormats; "" is "r"), as iwdump -t writes it: every face that shows
// a frame's time (iwtui's list, -t) writes it here.
func AppendTime(b []byte, format string, t time.Time, rel time.Duration) []byte {
	switch format {
	case "a":
		return t.UTC().AppendFormat(b, "15:04:05.000000")
	case "ad":
		return t.UTC().AppendFormat(b, "2006-01-02 15:04:05.000000")
	case "e":
		t = t.Round(time.Microsecond)
		return appendMicros(strconv.AppendInt(b, t.Unix(), 10), t.Nanosecond()/1000)
	}
	return appendSeconds(b, rel)
}

// head appends the fields every line starts with: frame, time, addresses.
func (p *Printer) head(b []byte, r *analyze.Record) []byte {
	b = digits.Append(b, uint64(r.Frame))
	b = append(b, ' ')
	b = p.appendTime(b, r)
	b = append(b, ' ')
	src, dst := r.Src, r.Dst
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
func (p *Printer) jsonHead(b []byte, r *analyze.Record) []byte {
	b = append(b, `{"frame":`...)
	b = digits.Append(b, uint64(r.Frame))
	b = append(b, `,"time":`...)
	b = appendSeconds(b, r.Rel)
	b = append(b, `,"conn":`...)
	b = p.out.AppendConn(b, r.Conn.ID)
	dir, src, dst := analyze.DirName(r.Conn, r.Dir), r.Src, r.Dst
	for i := range p.dirs {
		if d := &p.dirs[i]; d.src == src && d.dst == dst && d.dir == dir && d.text != nil {
			return append(b, d.text...)
		}
	}
	p.dirs[0], p.dirs[1] = p.dirs[1], p.dirs[0] // the older entry goes
	d := &p.dirs[0]
	d.dir, d.src, d.dst = dir, src, dst
	d.text = append(d.text[:0], `,"dir":"`...)
	d.text = append(d.text, dir...)
	d.text = append(d.text, `","src":"`...)
	d.text = src.AppendTo(d.text)
	d.text = append(d.text, `","dst":"`...)
	d.text = dst.AppendTo(d.text)
	d.text = append(d.text, '"')
	return append(b, d.text...)
}

func (p *Printer) pdu(r *analyze.Record) {
	e := r.PDU
	pdu := &e.PDU
	b := p.start()
	if p.o.Format == "json" {
		b = p.jsonHead(b, r)
		if e.Missing > 0 {
			b = append(b, `,"missing":`...)
			b = strconv.AppendInt(b, int64(e.Missing), 10)
		}
		b = AppendJSONFields(b, pdu, p.o.Numeric)
		if r.ULP != nil { // the storage protocol's fields (package ulp)
			b = AppendULPJSON(b, r.ULP, p.o.Numeric)
		}
		b = append(b, "}\n"...)
	} else {
		b = p.head(b, r)
		b = pdu.AppendSummary(b)
		if e.Missing > 0 {
			b = append(b, ", "...)
			b = strconv.AppendInt(b, int64(e.Missing), 10)
			b = append(b, " octets not captured"...)
		}
		if r.ULP != nil {
			b = append(b, " | "...)
			b = append(b, r.ULP.Summary...)
		}
		b = append(b, '\n')
		if p.o.Verbose {
			p.tree = TreeInput{PDU: pdu, Seq: e.Seq, Wire: len(e.Wire), Missing: e.Missing, ULP: r.ULP}
			p.nodes = AppendNodes(p.nodes[:0], &p.tree)
			b = AppendVerbose(b, p.nodes, p.o.Numeric)
		}
		if p.o.Hex {
			b = AppendHexDump(b, e.Wire)
		}
	}
	p.write(b)
}

// finding prints a finding; r.Conn is nil when the connection is unknown.
func (p *Printer) finding(r *analyze.Record) {
	f := &r.Finding
	b := p.start()
	if p.o.Format == "json" {
		if r.Conn != nil {
			b = p.jsonHead(b, r)
		} else {
			b = append(b, `{"frame":`...)
			b = strconv.AppendInt(b, int64(r.Frame), 10)
		}
		b = append(b, `,"finding":{"severity":`...)
		b = AppendJSONString(b, f.Severity.String())
		b = append(b, `,"code":`...)
		b = AppendJSONString(b, f.Code.String())
		b = append(b, `,"message":`...)
		b = AppendJSONString(b, f.Message)
		b = append(b, "}}\n"...)
	} else {
		b = p.head(b, r)
		b = append(b, "** "...)
		b = append(b, f.Severity.String()...)
		b = append(b, ' ')
		b = append(b, f.Code.String()...)
		b = append(b, ": "...)
		b = append(b, f.Message...)
		b = append(b, '\n')
	}
	p.write(b)
}

// note prints a line about a frame that holds no decodable PDU.
func (p *Printer) note(r *analyze.Record) {
	if p.o.Format == "json" {
		b := append(p.start(), `{"frame":`...)
		b = strconv.AppendInt(b, int64(r.Frame), 10)
		b = append(b, `,"note":`...)
		b = AppendJSONString(b, r.Note)
		b = append(b, "}\n"...)
		p.write(b)
		return
	}
	b := digits.Append(p.start(), uint64(r.Frame))
	b = append(b, ' ')
	b = p.appendTime(b, r)
	b = append(b, " ["...)
	b = append(b, r.Note...)
	b = append(b, "]\n"...)
	p.write(b)
}

const hexDigits = "0123456789abcdef"

// AppendHexDump writes octets as tcpdump -x does, 16 per line with offsets,
// plus the printable characters.
func AppendHexDump(b []byte, data []byte) []byte {
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
