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
// time. Here the common field groups are read from the decode.PDU by
// decode.ReadGroup (the one reader the export's Parquet writer shares)
// and written by their decode.GroupKind into room reserved once per PDU, so
// that keys, booleans and names are fixed-size stores rather than
// appends (each a growth check and a memmove call) and numbers are
// formatted in place. The names still come from the field table: a group
// lists the fields it writes, the plan supplies their keys, and a plan
// uses the fast path only if its fields are exactly a sequence of groups.
// TestJSONFastMatchesGeneric holds every group to the table's getters.

// A fastGroup is a run of fields, in table order, that decode.ReadGroup
// reads. All of a group's fields share one presence condition, so a PDU
// carries all of them or none.
type fastGroup struct {
	names  []string
	fields []int32 // indexes into jsonFields; nil if a name is missing
}

// fastGroups are decode.FieldGroups, resolved. MPA Request/Reply frames
// and Terminates (a few per connection) are left to the generic walk.
var fastGroups = resolveFastGroups(groupsOf(decode.FieldGroups))

func groupsOf(names [][]string) []fastGroup {
	gs := make([]fastGroup, len(names))
	for i := range names {
		gs[i].names = names[i]
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
	for i, g := range fastGroups {
		if g.fields != nil && fieldsHavePrefix(rest, g.fields) {
			steps = append(steps, fastStep{group: i, n: len(g.fields)})
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

// appendFast writes the plan's fields, as decode.ReadGroup reads them,
// each by its decode.GroupKind, into room reserved up front: the values
// are stored at b[n:] without growth checks (the slice bounds checks
// still guard against a short reservation).
func (pl *jsonPlan) appendFast(b []byte, p *decode.PDU, numeric bool) []byte {
	n := len(b)
	b = slices.Grow(b, pl.room+2*len(p.FPDU.Pad)) // PAD is 0-3 octets from ParseFPDU
	b = b[:cap(b)]
	keys := pl.keys
	var v decode.GroupValues
	for _, s := range pl.fast {
		decode.ReadGroup(s.group, p, &v)
		for k, kind := range decode.GroupKinds[s.group] {
			n = putChunk(b, n, &keys[k])
			x := v.U[k]
			if kind == decode.GroupUint { // most fields: one test, not a switch's search
				n = digits.Put(b, n, x)
				continue
			}
			switch kind {
			case decode.GroupHex64:
				n = putHex64(b, n, x)
			case decode.GroupBool:
				n = putBool(b, n, x != 0)
			case decode.GroupOctets:
				n = putHex(b, n, v.B)
			case decode.GroupCRCStatus:
				n = putName(b, n, crcStatusNames, x, decode.CRCStatus(x).String, numeric)
			case decode.GroupOpcode:
				n = putName(b, n, opcodeNames, x, decode.Opcode(x).String, numeric)
			case decode.GroupAtomicOp:
				n = putEnum(b, n, x, decode.AtomicOp(x).String(), numeric)
			}
		}
		keys = keys[s.n:]
	}
	return b[:n]
}

// A fastStep is a group as a plan runs it.
type fastStep struct {
	group int // index into decode.FieldGroups
	n     int // fields
}

// putName writes a named value from its table of quoted names when it is
// there, else by putEnum.
func putName(b []byte, n int, names []jsonChunk, x uint64, name func() string, numeric bool) int {
	if c := nameChunk(names, x, numeric); c != nil {
		return putChunk(b, n, c)
	}
	return putEnum(b, n, x, name(), numeric)
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
