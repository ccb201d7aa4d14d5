package finding

import "sort"

// Tally is the one count of findings: by code, by severity and by
// connection and code. The pipeline (analyze) adds every finding it hands
// out, whatever stage raised it (reassembly, framer, tracker, ULP), and
// every face reads the counts from here: iwdump -z findings and -z conv,
// the export's connections.findings (the findings table has a row per
// finding counted), iwtui's findings and connections views. A finding of
// no known connection (conn < 0) counts in the totals only.
//
// Memory is bounded: at most MaxConns connections keep their own counts
// (a connection holds one entry per code it raised); findings of further
// connections count in the totals and in ConnsDropped.
type Tally struct {
	byCode     [NumCodes]uint64
	bySeverity [3]uint64
	conns      map[int]*ConnTally
	// ConnsDropped counts the findings of connections past MaxConns.
	ConnsDropped uint64
}

// MaxConns bounds the connections a Tally keeps counts of: about 150
// octets each with a few codes, 20 MB at most, above the 100,000
// connections the analyzer's memory budget holds at once.
const MaxConns = 1 << 17

// ConnTally is the count of one connection.
type ConnTally struct {
	Total uint64
	codes []CodeCount // by first appearance; few per connection
}

// CodeCount is the count of one code.
type CodeCount struct {
	Code Code
	N    uint64
}

// Add counts a finding with code c on connection conn (< 0: none known).
func (t *Tally) Add(conn int, c Code) {
	t.AddN(conn, c, 1)
}

// AddN counts n findings with code c on connection conn.
func (t *Tally) AddN(conn int, c Code, n uint64) {
	if !c.Valid() || n == 0 {
		return
	}
	t.byCode[c] += n
	t.bySeverity[c.Severity()] += n
	if conn >= 0 {
		t.addConn(conn, c, n)
	}
}

// addConn counts n findings with code c on connection conn, not in the
// totals.
func (t *Tally) addConn(conn int, c Code, n uint64) {
	ct := t.conns[conn]
	if ct == nil {
		if len(t.conns) >= MaxConns {
			t.ConnsDropped += n
			return
		}
		if t.conns == nil {
			t.conns = map[int]*ConnTally{}
		}
		ct = &ConnTally{}
		t.conns[conn] = ct
	}
	ct.Total += n
	for i := range ct.codes {
		if ct.codes[i].Code == c {
			ct.codes[i].N += n
			return
		}
	}
	ct.codes = append(ct.codes, CodeCount{c, n})
}

// Code is the number of findings with code c.
func (t *Tally) Code(c Code) uint64 {
	if t == nil || !c.Valid() {
		return 0
	}
	return t.byCode[c]
}

// Severity is the number of findings of severity s.
func (t *Tally) Severity(s Severity) uint64 {
	if t == nil || int(s) >= len(t.bySeverity) {
		return 0
	}
	return t.bySeverity[s]
}

// Total is the number of findings.
func (t *Tally) Total() uint64 {
	if t == nil {
		return 0
	}
	return t.bySeverity[0] + t.bySeverity[1] + t.bySeverity[2]
}

// Conn is the number of findings of connection conn.
func (t *Tally) Conn(conn int) uint64 {
	if t == nil {
		return 0
	}
	if ct := t.conns[conn]; ct != nil {
		return ct.Total
	}
	return 0
}

// ConnCodes are the counts of connection conn by code, in catalogue order.
func (t *Tally) ConnCodes(conn int) []CodeCount {
	if t == nil || t.conns[conn] == nil {
		return nil
	}
	out := append([]CodeCount(nil), t.conns[conn].codes...)
	sort.Slice(out, func(i, j int) bool { return out[i].Code < out[j].Code })
	return out
}

// Conns lists the connections with findings, by number.
func (t *Tally) Conns() []int {
	if t == nil {
		return nil
	}
	out := make([]int, 0, len(t.conns))
	for id := range t.conns {
		out = append(out, id)
	}
	sort.Ints(out)
	return out
}

// Codes lists the codes with findings, worst severity first, then in
// catalogue order: the rows of -z findings.
func (t *Tally) Codes() []CodeCount {
	if t == nil {
		return nil
	}
	var out []CodeCount
	for c := Code(1); c < numCodes; c++ {
		if n := t.byCode[c]; n > 0 {
			out = append(out, CodeCount{c, n})
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Code.Severity() > out[j].Code.Severity() })
	return out
}

// Clone returns a copy of t that shares nothing with it.
func (t *Tally) Clone() *Tally {
	c := &Tally{}
	c.Merge(t, nil)
	return c
}

// Merge adds o's counts to t, numbering o's connections with conn (a
// sharded pipeline's shard-local numbers to the global ones).
func (t *Tally) Merge(o *Tally, conn func(int) int) {
	if o == nil {
		return
	}
	for c := range t.byCode {
		t.byCode[c] += o.byCode[c]
	}
	for i := range t.bySeverity {
		t.bySeverity[i] += o.bySeverity[i]
	}
	t.ConnsDropped += o.ConnsDropped
	for id, ct := range o.conns {
		g := id
		if conn != nil {
			g = conn(id)
		}
		for _, cc := range ct.codes {
			t.addConn(g, cc.Code, cc.N)
		}
	}
}
