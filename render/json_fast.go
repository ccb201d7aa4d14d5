package render

import (
	"encoding/hex"
	"slices"

	"github.com/iwkit/iwkit/decode"
	"github.com/iwkit/iwkit/internal/digits"
)

// The specialized NDJSON encoder. The generic walk (appendGeneric) calls a
// getter per field and switches on the kind of the value it returns; for
// the FPDUs that make up bulk traffic that is most of iwdump -T json's
// time. Here the common field groups are written by straight-line code
// that reads the decode.PDU directly, into room reserved once per PDU, so
// that keys, booleans and names are fixed-size stores rather than
// appends (each a growth check and a memmove call) and numbers are
// formatted in place. The names still come from the field table: a group
// lists the fields it writes, the plan supplies their keys, and a plan
// uses the fast path only if its fields are exactly a sequence of groups.
// TestJSONFastMatchesGeneric holds every group to the table's getters.

// A fastGroup is a run of fields, in table order, that one function
// writes. All of a group's fields share one presence condition, so a PDU
// carries all of them or none.
type fastGroup struct {
	names  []string
	fields []int32 // indexes into jsonFields; nil if a name is missing
	write  fastWriter
}

// fastGroups are decode.FieldGroups, each with its writer (fastWriters,
// in the same order). MPA Request/Reply frames and Terminates (a few per
// connection) are left to the generic walk.
var fastGroups = resolveFastGroups(withWriters(fastWriters))

// fastWriters write decode.FieldGroups, one a group, in order.
var fastWriters = []fastWriter{fastFPDU, fastCRCComputed, fastCRCStatus, fastDDP, fastTagged, fastUntagged, fastPayloadLen,
	fastRDMAP, fastInvalSTag, fastReadReq, fastImmData, fastAtomicReq, fastAtomicResp, fastRDMAPTail}

// withWriters pairs decode.FieldGroups with their writers; a group
// without one (the lists differ in length: TestJSONFastGroupsResolve)
// takes the generic walk.
func withWriters(ws []fastWriter) []fastGroup {
	var gs []fastGroup
	for i, names := range decode.FieldGroups {
		if len(ws) == len(decode.FieldGroups) {
			gs = append(gs, fastGroup{names: names, write: ws[i]})
		}
	}
	return gs
}

// resolveFastGroups looks the groups' names up among jsonFields. A name
// the table no longer has disables its group (its PDUs take the generic
// walk) rather than the program; TestJSONFastGroupsResolve notices.
func resolveFastGroups(groups []fastGroup) []fastGroup {
	index := map[string]int32{}
	for i := range jsonFields {
		index[jsonFields[i].f.Name] = int32(i)
	}
	for g := range groups {
		fields := make([]int32, 0, len(groups[g].names))
		for _, name := range groups[g].names {
			i, ok := index[name]
			if !ok {
				fields = nil
				break
			}
			fields = append(fields, i)
		}
		groups[g].fields = fields
	}
	return groups
}

// fastGroupsFor returns the steps that write exactly the plan's fields,
// or nil when they are not a sequence of groups or a key does not fit a
// chunk. It also fills the plan's keys and room.
func fastGroupsFor(pl *jsonPlan) []fastStep {
	var steps []fastStep
	rest := pl.fields
	for _, g := range fastGroups {
		if g.fields != nil && fieldsHavePrefix(rest, g.fields) {
			steps = append(steps, fastStep{write: g.write, n: len(g.fields)})
			rest = rest[len(g.fields):]
		}
	}
	if len(rest) > 0 || len(steps) == 0 {
		return nil
	}
	keys := make([]jsonChunk, len(pl.pre))
	for k, pre := range pl.pre {
		var ok bool
		if keys[k], ok = jsonChunkOf(string(pre)); !ok {
			return nil
		}
	}
	pl.keys = keys
	// Each field writes its key as a chunk, then a number of at most 20
	// digits, a name (a chunk, or by putEnum at most jsonChunkLen octets:
	// TestJSONFastNamesFit) or hex (Immediate Data: 18 octets; PAD is
	// added per PDU). Room for two chunks and 20 octets a field leaves
	// every chunk store its full length.
	pl.room = len(pl.fields) * (2*jsonChunkLen + 20)
	return steps
}

func fieldsHavePrefix(s, prefix []int32) bool {
	if len(s) < len(prefix) {
		return false
	}
	for i := range prefix {
		if s[i] != prefix[i] {
			return false
		}
	}
	return true
}

// appendFast writes the plan's fields with its groups' writers into room
// reserved up front: the writers store at b[n:] without growth checks
// (the slice bounds checks still guard against a short reservation).
func (pl *jsonPlan) appendFast(b []byte, p *decode.PDU, numeric bool) []byte {
	n := len(b)
	b = slices.Grow(b, pl.room+2*len(p.FPDU.Pad)) // PAD is 0-3 octets from ParseFPDU
	b = b[:cap(b)]
	keys := pl.keys
	for _, s := range pl.fast {
		n = s.write(b, n, p, keys[:s.n], numeric)
		keys = keys[s.n:]
	}
	return b[:n]
}

// A fastWriter writes the values of its group's fields at b[n:], each
// after its key (the plan's octets for that field: separators and key),
// and returns the new end.
type fastWriter func(b []byte, n int, p *decode.PDU, keys []jsonChunk, numeric bool) int

// A fastStep is a group as a plan runs it.
type fastStep struct {
	write fastWriter
	n     int // fields
}

// jsonChunkLen bounds the keys and names written as one fixed-size store.
const jsonChunkLen = 48

// A jsonChunk (a chunk) is up to jsonChunkLen octets padded to
// jsonChunkLen: copying it is a few vector moves, whatever its length.
type jsonChunk struct {
	b [jsonChunkLen]byte
	n int
}

func jsonChunkOf(s string) (jsonChunk, bool) {
	var c jsonChunk
	c.n = copy(c.b[:], s)
	return c, len(s) <= jsonChunkLen
}

// The put functions write a value at b[n:] and return the new end. b has
// room for a whole chunk past n; a chunk's padding is overwritten by what
// follows.

func putChunk(b []byte, n int, c *jsonChunk) int {
	*(*[jsonChunkLen]byte)(b[n : n+jsonChunkLen]) = c.b
	return n + c.n
}

func putBool(b []byte, n int, x bool) int {
	if x {
		*(*[4]byte)(b[n : n+4]) = [4]byte{'t', 'r', 'u', 'e'}
		return n + 4
	}
	*(*[5]byte)(b[n : n+5]) = [5]byte{'f', 'a', 'l', 's', 'e'}
	return n + 5
}

// putHex64 writes a 64-bit field shown in hex as JSON writes it
// (decode.Field.JSONHex): a string "0x…", at most 20 octets.
func putHex64(b []byte, n int, x uint64) int {
	b[n], b[n+1], b[n+2] = '"', '0', 'x'
	n += 3 + len(digits.AppendHex(b[n+3:n+3], x))
	b[n] = '"'
	return n + 1
}

// putHex writes x as a JSON string of hex digits.
func putHex(b []byte, n int, x []byte) int {
	b[n] = '"'
	n += 1 + hex.Encode(b[n+1:], x)
	b[n] = '"'
	return n + 1
}

// A named value (KindEnum) is written from a table of its quoted names
// when there is one for it, else by putEnum.

// nameChunk returns x's quoted name from names, or nil when it is not
// there or -n wants numbers.
func nameChunk(names []jsonChunk, x uint64, numeric bool) *jsonChunk {
	if numeric || x >= uint64(len(names)) {
		return nil
	}
	return &names[x]
}

// putEnum writes a named value: its name or, with -n, its number. Names
// are static ASCII with nothing to escape.
func putEnum(b []byte, n int, x uint64, name string, numeric bool) int {
	if numeric {
		return digits.Put(b, n, x)
	}
	b[n] = '"'
	n += 1 + copy(b[n+1:n+1+len(name)], name) // out of room: a panic, not a cut name
	b[n] = '"'
	return n + 1
}

// quotedNames are the JSON forms of the names String gives the values
// 0 to n-1 of a named type, worked out once.
func quotedNames(n int, name func(i int) string) []jsonChunk {
	names := make([]jsonChunk, 0, n)
	for i := range n {
		c, ok := jsonChunkOf(`"` + name(i) + `"`)
		if !ok { // too long for a chunk: from here on, written by putEnum
			break
		}
		names = append(names, c)
	}
	return names
}

var (
	opcodeNames    = quotedNames(16, func(i int) string { return decode.Opcode(i).String() })
	crcStatusNames = quotedNames(4, func(i int) string { return decode.CRCStatus(i).String() })
)

// Group writers, one per fastGroups entry, values in the order of names.

func fastFPDU(b []byte, n int, p *decode.PDU, keys []jsonChunk, _ bool) int {
	_ = keys[2]
	n = putChunk(b, n, &keys[0])
	n = digits.Put(b, n, uint64(p.FPDU.ULPDULength))
	n = putChunk(b, n, &keys[1])
	n = putHex(b, n, p.FPDU.Pad)
	n = putChunk(b, n, &keys[2])
	return digits.Put(b, n, uint64(p.FPDU.CRC))
}

func fastCRCComputed(b []byte, n int, p *decode.PDU, keys []jsonChunk, _ bool) int {
	n = putChunk(b, n, &keys[0])
	return digits.Put(b, n, uint64(p.ComputedCRC))
}

func fastCRCStatus(b []byte, n int, p *decode.PDU, keys []jsonChunk, numeric bool) int {
	_ = keys[1]
	n = putChunk(b, n, &keys[0])
	if c := nameChunk(crcStatusNames, uint64(p.CRCStatus), numeric); c != nil {
		n = putChunk(b, n, c)
	} else {
		n = putEnum(b, n, uint64(p.CRCStatus), p.CRCStatus.String(), numeric)
	}
	n = putChunk(b, n, &keys[1])
	return digits.Put(b, n, uint64(len(p.Markers)))
}

func fastDDP(b []byte, n int, p *decode.PDU, keys []jsonChunk, _ bool) int {
	_ = keys[3]
	h := &p.Seg.DDP
	n = putChunk(b, n, &keys[0])
	n = putBool(b, n, h.Tagged)
	n = putChunk(b, n, &keys[1])
	n = putBool(b, n, h.Last)
	n = putChunk(b, n, &keys[2])
	n = digits.Put(b, n, uint64(h.Rsvd))
	n = putChunk(b, n, &keys[3])
	return digits.Put(b, n, uint64(h.DV))
}

func fastTagged(b []byte, n int, p *decode.PDU, keys []jsonChunk, _ bool) int {
	_ = keys[1]
	n = putChunk(b, n, &keys[0])
	n = digits.Put(b, n, uint64(p.Seg.DDP.STag))
	n = putChunk(b, n, &keys[1])
	return putHex64(b, n, p.Seg.DDP.TO)
}

func fastUntagged(b []byte, n int, p *decode.PDU, keys []jsonChunk, _ bool) int {
	_ = keys[3]
	h := &p.Seg.DDP
	n = putChunk(b, n, &keys[0])
	n = digits.Put(b, n, uint64(h.RsvdULP2))
	n = putChunk(b, n, &keys[1])
	n = digits.Put(b, n, uint64(h.QN))
	n = putChunk(b, n, &keys[2])
	n = digits.Put(b, n, uint64(h.MSN))
	n = putChunk(b, n, &keys[3])
	return digits.Put(b, n, uint64(h.MO))
}

func fastPayloadLen(b []byte, n int, p *decode.PDU, keys []jsonChunk, _ bool) int {
	n = putChunk(b, n, &keys[0])
	return digits.Put(b, n, uint64(len(p.Seg.Payload)))
}

func fastRDMAP(b []byte, n int, p *decode.PDU, keys []jsonChunk, numeric bool) int {
	_ = keys[2]
	c := &p.Seg.RDMAP
	n = putChunk(b, n, &keys[0])
	n = digits.Put(b, n, uint64(c.RV))
	n = putChunk(b, n, &keys[1])
	n = digits.Put(b, n, uint64(c.Rsv))
	n = putChunk(b, n, &keys[2])
	if name := nameChunk(opcodeNames, uint64(c.Opcode), numeric); name != nil {
		return putChunk(b, n, name)
	}
	return putEnum(b, n, uint64(c.Opcode), c.Opcode.String(), numeric)
}

func fastInvalSTag(b []byte, n int, p *decode.PDU, keys []jsonChunk, _ bool) int {
	n = putChunk(b, n, &keys[0])
	return digits.Put(b, n, uint64(p.Seg.InvalidateSTag))
}

func fastReadReq(b []byte, n int, p *decode.PDU, keys []jsonChunk, _ bool) int {
	_ = keys[4]
	r := &p.Seg.ReadRequest
	n = putChunk(b, n, &keys[0])
	n = digits.Put(b, n, uint64(r.SinkSTag))
	n = putChunk(b, n, &keys[1])
	n = putHex64(b, n, r.SinkTO)
	n = putChunk(b, n, &keys[2])
	n = digits.Put(b, n, uint64(r.Size))
	n = putChunk(b, n, &keys[3])
	n = digits.Put(b, n, uint64(r.SrcSTag))
	n = putChunk(b, n, &keys[4])
	return putHex64(b, n, r.SrcTO)
}

func fastImmData(b []byte, n int, p *decode.PDU, keys []jsonChunk, _ bool) int {
	n = putChunk(b, n, &keys[0])
	return putHex(b, n, p.Seg.ImmData[:])
}

func fastAtomicReq(b []byte, n int, p *decode.PDU, keys []jsonChunk, numeric bool) int {
	_ = keys[7]
	r := &p.Seg.AtomicRequest
	n = putChunk(b, n, &keys[0])
	n = putEnum(b, n, uint64(r.AOpCode), r.AOpCode.String(), numeric)
	n = putChunk(b, n, &keys[1])
	n = digits.Put(b, n, uint64(r.RequestID))
	n = putChunk(b, n, &keys[2])
	n = digits.Put(b, n, uint64(r.RemoteSTag))
	n = putChunk(b, n, &keys[3])
	n = putHex64(b, n, r.RemoteTO)
	n = putChunk(b, n, &keys[4])
	n = putHex64(b, n, r.AddSwapData)
	n = putChunk(b, n, &keys[5])
	n = putHex64(b, n, r.AddSwapMask)
	n = putChunk(b, n, &keys[6])
	n = putHex64(b, n, r.CompareData)
	n = putChunk(b, n, &keys[7])
	return putHex64(b, n, r.CompareMask)
}

func fastAtomicResp(b []byte, n int, p *decode.PDU, keys []jsonChunk, _ bool) int {
	_ = keys[1]
	r := &p.Seg.AtomicResponse
	n = putChunk(b, n, &keys[0])
	n = digits.Put(b, n, uint64(r.OrigRequestID))
	n = putChunk(b, n, &keys[1])
	return putHex64(b, n, r.OrigValue)
}

func fastRDMAPTail(b []byte, n int, p *decode.PDU, keys []jsonChunk, _ bool) int {
	_ = keys[1]
	n = putChunk(b, n, &keys[0])
	n = putBool(b, n, p.Seg.DDP.DV == 0 || p.Seg.RDMAP.RV == 0)
	n = putChunk(b, n, &keys[1])
	return putBool(b, n, p.Seg.RDMAP.Opcode.Extension())
}
