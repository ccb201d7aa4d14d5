package finding

import (
	"reflect"
	"testing"
)

// TestTally: totals by code and severity count every finding, connections
// their own; a merge renumbers connections and adds up the same as one
// tally of everything would.
func TestTally(t *testing.T) {
	var a, b, all Tally
	add := func(x *Tally, conn int, c Code, shift int) {
		x.Add(conn, c)
		g := conn
		if conn >= 0 {
			g = conn + shift
		}
		all.Add(g, c)
	}
	add(&a, 1, TCPGap, 0)
	add(&a, 1, TCPGap, 0)
	add(&a, 1, MPACRCBad, 0)
	add(&a, -1, MPAResync, 0)
	add(&b, 1, MPAParamsInferred, 10)
	add(&b, 2, MPACRCBad, 10)
	var m Tally
	m.Merge(&a, nil)
	m.Merge(&b, func(id int) int { return id + 10 })
	if !reflect.DeepEqual(&m, &all) {
		t.Fatalf("merged %+v, want %+v", m, all)
	}
	if m.Total() != 6 || m.Code(TCPGap) != 2 || m.Code(MPACRCBad) != 2 || m.Conn(1) != 3 || m.Conn(11) != 1 || m.Conn(12) != 1 {
		t.Fatalf("counts: total %d, tcp.gap %d, crc %d, conn 1 %d", m.Total(), m.Code(TCPGap), m.Code(MPACRCBad), m.Conn(1))
	}
	if got := m.Severity(Error) + m.Severity(Warning) + m.Severity(Note); got != 6 {
		t.Fatalf("by severity %d", got)
	}
	if got := m.Conns(); !reflect.DeepEqual(got, []int{1, 11, 12}) {
		t.Fatalf("conns %v", got)
	}
	codes := m.Codes()
	for i := 1; i < len(codes); i++ {
		if codes[i].Code.Severity() > codes[i-1].Code.Severity() {
			t.Fatalf("codes not worst first: %v", codes)
		}
	}
	c := m.Clone()
	c.Add(1, TCPGap)
	if m.Conn(1) != 3 {
		t.Fatal("a clone shares its counts")
	}
	var nilT *Tally
	if nilT.Conn(1) != 0 || nilT.Total() != 0 || nilT.Codes() != nil {
		t.Fatal("a nil tally counts")
	}
}
