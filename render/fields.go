package render

import (
	"cmp"
	"encoding/hex"
	"fmt"
	"io"
	"math/bits"
	"strconv"
	"strings"
	"time"

	"github.com/iwkit/iwkit/analyze"
	"github.com/iwkit/iwkit/decode"
	"github.com/iwkit/iwkit/internal/digits"
	"github.com/iwkit/iwkit/ulp"
)

// tshark's field output (-T fields -e FIELD ... -E OPTION=VALUE), over the
// field table: one line per frame that holds the last octet of at least
// one PDU (that -Y matches), the values of each -e field in its column,
// several PDUs of one frame being several occurrences. Options keep
// tshark's meaning (tshark(1), epan/print.c).

// FieldsOptions are -e and -E.
type FieldsOptions struct {
	Fields     []string // -e, in order
	Header     bool     // header=y: a first line with the field names
	Separator  byte     // separator=/t|/s|C: between fields (default tab)
	Aggregator byte     // aggregator=,|/s|C: between occurrences (default ',')
	Occurrence byte     // occurrence=f|l|a: first, last or all (default a)
	Quote      byte     // quote=d|s|n: '"', '\'' or none around each non-empty field
	Escape     bool     // escape=y (default): \t, \n, \r, \\ and the quote written as escapes
}

// DefaultFieldsOptions are tshark's defaults.
func DefaultFieldsOptions() FieldsOptions {
	return FieldsOptions{Separator: '\t', Aggregator: ',', Occurrence: 'a', Escape: true}
}

// SetE applies one -E option (tshark's syntax: name=value).
func (o *FieldsOptions) SetE(opt string) error {
	name, val, ok := strings.Cut(opt, "=")
	if !ok {
		return fmt.Errorf("-E %q: want name=value", opt)
	}
	char := func() (byte, error) {
		switch {
		case val == "/t":
			return '\t', nil
		case val == "/s":
			return ' ', nil
		case val == "":
			return 0, fmt.Errorf("-E %s needs a character", name)
		}
		return val[0], nil // tshark takes the first character
	}
	var err error
	switch name {
	case "header":
		o.Header, err = yesNo(name, val)
	case "escape":
		o.Escape, err = yesNo(name, val)
	case "separator":
		o.Separator, err = char()
	case "aggregator":
		o.Aggregator, err = char()
	case "occurrence":
		if val != "f" && val != "l" && val != "a" {
			return fmt.Errorf("-E occurrence takes f, l or a, not %q", val)
		}
		o.Occurrence = val[0]
	case "quote":
		switch val {
		case "d":
			o.Quote = '"'
		case "s":
			o.Quote = '\''
		case "n":
			o.Quote = 0
		default:
			return fmt.Errorf("-E quote takes d, s or n, not %q", val)
		}
	default:
		return fmt.Errorf("-E %q: unknown option (header, separator, occurrence, aggregator, quote, escape)", name)
	}
	return err
}

func yesNo(name, val string) (bool, error) {
	switch val {
	case "y":
		return true, nil
	case "n":
		return false, nil
	}
	return false, fmt.Errorf("-E %s takes y or n, not %q", name, val)
}

// recordFields are the fields of a PDU's record rather than its octets
// (analyze.RecordFields with a description): NDJSON's top-level keys, and
// tshark's frame.* names for habit's sake. All but missing are the
// frame's: one occurrence a line.
var recordFields = func() []*analyze.RecordField {
	var out []*analyze.RecordField
	for i := range analyze.RecordFields {
		if rf := &analyze.RecordFields[i]; rf.Desc != "" {
			out = append(out, rf)
		}
	}
	return out
}()

// fieldCol is one -e column.
type fieldCol struct {
	rec   int           // index into recordFields, or -1
	f     *decode.Field // a field-table field
	uf    *ulp.Field    // or a ULP field-table field
	uid   ulp.FieldID
	hex   bool     // hex number (0x, zero-padded)
	width int      // hex digits for 0x-padded numbers
	vals  [][]byte // occurrences in the current frame
	n     int
}

// next returns a buffer for the column's next occurrence.
func (c *fieldCol) next() []byte {
	if c.n < len(c.vals) {
		return c.vals[c.n][:0]
	}
	return nil
}

// add keeps b as the column's next occurrence.
func (c *fieldCol) add(b []byte) {
	if c.n < len(c.vals) {
		c.vals[c.n] = b
	} else {
		c.vals = append(c.vals, b)
	}
	c.n++
}

// FieldsPrinter writes -T fields. It is an analyze.Consumer; call Flush
// after the run. Run it on one worker: a line gathers every PDU of its
// frame.
type FieldsPrinter struct {
	w       io.Writer
	o       FieldsOptions
	numeric bool
	filter  func(*analyze.Record) bool
	cols    []fieldCol
	frame   int // frame of the pending line; 0 none
	line    []byte
	started bool
}

// NewFieldsPrinter checks the field names. numeric prints named values as
// numbers (-n); match, when set, keeps only the PDUs it matches (-Y).
func NewFieldsPrinter(w io.Writer, o FieldsOptions, numeric bool, match func(*analyze.Record) bool) (*FieldsPrinter, error) {
	if len(o.Fields) == 0 {
		return nil, fmt.Errorf("-T fields needs at least one -e FIELD")
	}
	p := &FieldsPrinter{w: w, o: o, numeric: numeric, filter: match}
	for _, name := range o.Fields {
		c := fieldCol{rec: -1}
		for i, rf := range recordFields {
			if rf.Name == name {
				c.rec = i
			}
		}
		if c.rec < 0 {
			if f, ok := decode.FieldByName(name); ok {
				c.f, c.hex, c.width = f, f.Hex, hexWidth(f.Size, f.Mask)
			} else if id, uf, ok := ulp.FieldByName(name); ok {
				c.uf, c.uid, c.hex, c.width = uf, id, uf.Hex, hexWidth(uf.Size, 0)
			} else {
				return nil, fmt.Errorf("-e %s: no such field (iwdump -G fields lists them)", name)
			}
		}
		p.cols = append(p.cols, c)
	}
	return p, nil
}

// hexWidth is the number of hex digits tshark pads a BASE_HEX field to:
// the width of its type.
func hexWidth(size int, mask uint64) int {
	switch {
	case size > 0:
		return size * 2
	case mask != 0:
		return (bits.Len64(mask) + 7) / 8 * 2
	}
	return 8
}

// Record adds a PDU to its frame's line.
func (p *FieldsPrinter) Record(r *analyze.Record) {
	if r.Kind != analyze.KindPDU || (p.filter != nil && !p.filter(r)) {
		return
	}
	if r.Frame != p.frame {
		p.Flush()
		p.frame = r.Frame
	}
	pdu := &r.PDU.PDU
	m := decode.Present(pdu)
	for i := range p.cols {
		c := &p.cols[i]
		switch {
		case c.rec >= 0:
			// Fields of the frame (all but missing) occur once a line,
			// as tshark's frame.number.
			rf := recordFields[c.rec]
			switch {
			case rf.Either[0] != "":
				// ip.addr, tcp.port: both values, as tshark's two occurrences.
				if c.n == 0 {
					for _, name := range rf.Either {
						if b, ok := p.appendRecordValue(c.next(), name, r); ok {
							c.add(b)
						}
					}
				}
			case c.n == 0 || rf.Name == "missing":
				c.add(p.appendRecordField(c.next(), c.rec, r))
			}
		case c.uf != nil:
			if r.ULP == nil {
				continue
			}
			// every occurrence: an SMB2 compound's members each have
			// theirs, as tshark repeats smb2.cmd
			for k := 0; ; k++ {
				v, ok := r.ULP.Nth(c.uid, k)
				if !ok {
					break
				}
				if c.uf.List {
					// one occurrence per item, as tshark repeats nfs.opcode
					c.uf.Items(v.S, func(item string) { c.add(p.appendText(c.next(), item)) })
				} else {
					c.add(p.appendValue(c.next(), c, v))
				}
			}
		default:
			if v, ok := c.f.GetIn(pdu, m); ok {
				c.add(p.appendValue(c.next(), c, v))
			}
		}
	}
}

func (p *FieldsPrinter) appendRecordField(b []byte, i int, r *analyze.Record) []byte {
	switch recordFields[i].Name {
	case "frame", "frame.number":
		return strconv.AppendInt(b, int64(r.Frame), 10)
	case "time":
		return appendSeconds(b, r.Rel)
	case "conn":
		return strconv.AppendUint(b, r.Conn.ID, 10)
	case "dir":
		return append(b, analyze.DirName(r.Conn, r.Dir)...)
	case "src":
		return r.Src.AppendTo(b)
	case "dst":
		return r.Dst.AppendTo(b)
	case "missing":
		return strconv.AppendInt(b, int64(r.PDU.Missing), 10)
	case "frame.time_relative":
		return appendNanos(b, r.Rel)
	case "frame.time_epoch":
		return appendNanos(b, time.Duration(r.Time.UnixNano()))
	}
	b, _ = p.appendRecordValue(b, recordFields[i].Name, r)
	return b
}

// appendRecordValue writes record field name's value by its kind (an
// address as text, a number in decimal); false when r has none.
func (p *FieldsPrinter) appendRecordValue(b []byte, name string, r *analyze.Record) ([]byte, bool) {
	get, _, ok := analyze.ResolveField(name)
	if !ok {
		return b, false
	}
	v, ok := get(r)
	if !ok {
		return b, false
	}
	switch v.Kind {
	case decode.KindAddr:
		return decode.AddrOf(v).AppendTo(b), true
	case decode.KindTime:
		return decode.AppendTime(b, v), true
	case decode.KindUint, decode.KindBool:
		return strconv.AppendUint(b, v.U, 10), true
	}
	return p.appendText(b, v.S), true
}

// appendNanos writes seconds with 9 decimals, as tshark's relative and
// epoch times.
func appendNanos(b []byte, d time.Duration) []byte { return digits.AppendNanos(b, d) }

// appendValue writes a value as tshark does: hex numbers zero-padded to
// the field's width, booleans 1/0, octets as plain hex; named values by
// name (by number with -n).
func (p *FieldsPrinter) appendValue(b []byte, c *fieldCol, v decode.Value) []byte {
	switch v.Kind {
	case decode.KindUint:
		if c.hex {
			var tmp [16]byte
			digits := strconv.AppendUint(tmp[:0], v.U, 16)
			b = append(b, "0x"...)
			if pad := c.width - len(digits); pad > 0 {
				b = append(b, zeros[:pad]...)
			}
			return append(b, digits...)
		}
		return strconv.AppendUint(b, v.U, 10)
	case decode.KindEnum:
		if p.numeric {
			return strconv.AppendUint(b, v.U, 10)
		}
		return p.appendText(b, v.S)
	case decode.KindString:
		return p.appendText(b, v.S)
	case decode.KindBool:
		return strconv.AppendUint(b, v.U, 10)
	case decode.KindBytes:
		return hex.AppendEncode(b, v.B)
	}
	return b
}

const zeros = "0000000000000000"

// appendText writes a string, escaped as tshark's escape=y does.
func (p *FieldsPrinter) appendText(b []byte, s string) []byte {
	if !p.o.Escape {
		return append(b, s...)
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\':
			b = append(b, `\\`...)
		case c == '\t':
			b = append(b, `\t`...)
		case c == '\n':
			b = append(b, `\n`...)
		case c == '\r':
			b = append(b, `\r`...)
		case c != 0 && c == p.o.Quote:
			b = append(b, '\\', c)
		default:
			b = append(b, c)
		}
	}
	return b
}

// Flush writes the pending line (and the header, before the first line).
func (p *FieldsPrinter) Flush() {
	if !p.started {
		p.started = true
		if p.o.Header {
			b := p.line[:0]
			for i, name := range p.o.Fields {
				if i > 0 {
					b = append(b, p.o.Separator)
				}
				b = append(b, name...)
			}
			p.w.Write(append(b, '\n'))
			p.line = b
		}
	}
	if p.frame == 0 {
		return
	}
	b := p.line[:0]
	for i := range p.cols {
		c := &p.cols[i]
		if i > 0 {
			b = append(b, p.o.Separator)
		}
		if c.n == 0 {
			continue
		}
		vals := c.vals[:c.n]
		switch p.o.Occurrence {
		case 'f':
			vals = vals[:1]
		case 'l':
			vals = vals[c.n-1:]
		}
		if p.o.Quote != 0 {
			b = append(b, p.o.Quote)
		}
		for k, v := range vals {
			if k > 0 {
				b = append(b, p.o.Aggregator)
			}
			b = append(b, v...)
		}
		if p.o.Quote != 0 {
			b = append(b, p.o.Quote)
		}
		c.n = 0
	}
	p.w.Write(append(b, '\n'))
	p.line = b
	p.frame = 0
}

// WriteGlossary lists the fields -e takes as tshark -G fields does: a P
// line per protocol, then an F line per field: description, name, type,
// protocol, base, bit mask, blurb (tab-separated).
func WriteGlossary(w io.Writer) {
	fmt.Fprintf(w, "P\tiwdump record\tframe\n")
	for _, rf := range recordFields {
		base := "BASE_NONE"
		if rf.Kind == decode.KindUint {
			base = "BASE_DEC"
		}
		ft := ftType(rf.Kind, 0, 0)
		if rf.Kind == decode.KindUint && strings.HasPrefix(rf.Name, "tcp.") {
			ft = "FT_UINT16" // ports
		}
		if rf.Name == "frame.time_epoch" {
			ft = "FT_ABSOLUTE_TIME"
		}
		fmt.Fprintf(w, "F\t%s\t%s\t%s\tframe\t%s\t0x0\t\n", rf.Desc, rf.Name, ft, base)
	}
	seen := map[string]bool{}
	proto := func(name string) string {
		proto, _, _ := strings.Cut(name, ".")
		if !seen[proto] {
			seen[proto] = true
			fmt.Fprintf(w, "P\t%s\t%s\n", cmp.Or(protoNames[proto], proto), proto)
		}
		return proto
	}
	base := func(k decode.FieldKind, hex bool) string {
		switch {
		case k == decode.KindUint && hex:
			return "BASE_HEX"
		case k == decode.KindUint || k == decode.KindEnum:
			return "BASE_DEC"
		}
		return "BASE_NONE"
	}
	fs := decode.Fields()
	for i := range fs {
		f := &fs[i]
		pr := proto(f.Name)
		fmt.Fprintf(w, "F\t%s\t%s\t%s\t%s\t%s\t0x%x\t\n", f.Desc, f.Name, ftType(f.Kind, f.Size, f.Mask), pr, base(f.Kind, f.Hex), f.Mask)
	}
	// The storage protocols' fields (ulp.Fields): no bit masks; numbers
	// without a fixed wire width are 64-bit counts.
	us := ulp.Fields()
	for i := range us {
		f := &us[i]
		pr := proto(f.Name)
		size := f.Size
		if size == 0 && f.Kind == decode.KindUint {
			size = 8
		}
		fmt.Fprintf(w, "F\t%s\t%s\t%s\t%s\t%s\t0x0\t\n", f.Desc, f.Name, ftType(f.Kind, size, 0), pr, base(f.Kind, f.Hex))
	}
}

// protoNames are the P lines' protocol names.
var protoNames = map[string]string{
	"mpa": "MPA (RFC 5044, RFC 6581)", "ddp": "DDP (RFC 5041)", "rdmap": "RDMAP (RFC 5040, RFC 7306)",
	"ulp": "iwkit storage-protocol linking", "nvme": "NVMe over Fabrics, RDMA transport", "iser": "iSER (RFC 7145)",
	"iscsi": "iSCSI (RFC 7143)", "scsi": "SCSI", "smbd": "SMB Direct (MS-SMBD)", "smb2": "SMB2 (MS-SMB2)",
	"rpcrdma": "RPC-over-RDMA (RFC 8166)", "rpc": "ONC RPC (RFC 5531)", "nfs": "NFS (RFC 1813, RFC 8881, RFC 7862)",
}

// ftType names a field's type as Wireshark's FT_ constants.
func ftType(k decode.FieldKind, size int, mask uint64) string {
	switch k {
	case decode.KindBool:
		return "FT_BOOLEAN"
	case decode.KindString:
		return "FT_STRING"
	case decode.KindBytes:
		return "FT_BYTES"
	case decode.KindTime:
		return "FT_RELATIVE_TIME"
	case decode.KindAddr:
		return "FT_IPv4" // as Wireshark's ip.* (ours take IPv6 too)
	case decode.KindEnum:
		if size == 0 {
			return "FT_UINT8" // named values: tshark's value_string fields
		}
	}
	n := size * 8
	if size == 0 {
		n = 32
		if mask != 0 {
			n = bits.Len64(mask)
		}
	}
	switch {
	case n > 32:
		return "FT_UINT64"
	case n > 16:
		return "FT_UINT32"
	case n > 8:
		return "FT_UINT16"
	}
	return "FT_UINT8"
}
