package tui

import (
	"fmt"
	"strings"

	"github.com/gdamore/tcell/v2"
	"github.com/rivo/tview"
)

// Follow stream (F), as Wireshark's and termshark's "Follow TCP Stream"
// but at the MPA layer: the reassembled byte stream of the selected row's
// connection, both directions in the order they were sent or one of them
// (d), in hex and ASCII, coloured by direction, with every FPDU's (or MPA
// frame's) boundary on a line of its own and its markers shown in
// reverse (RFC 5044 §4). Where the FPDUs start and where the markers sit
// is the pipeline's: the rows' sequence ranges (the framer's) and the
// markers the decoder finds at the connection's S0. Memory stays bounded:
// a page of at most followPage PDUs is read back from the capture file
// at a time (n, p: next and previous page).

// followPage is the PDUs a page of the stream shows.
const followPage = 64

// followView is the stream page.
type followView struct {
	*tview.TextView
	conn  uint32
	dir   int   // -1 both, else the reassembly.Dir shown
	pages []int // the first index row of each page seen (pages[len-1] is shown)
	next  int   // the first index row after the page shown (-1: none)
}

func newFollowView() *followView {
	v := &followView{TextView: tview.NewTextView().SetDynamicColors(true).SetScrollable(true).SetWrap(false), dir: -1}
	v.SetBorder(true).SetTitleAlign(tview.AlignLeft)
	return v
}

// openFollow shows the stream of the selected row's connection from that
// row on (F).
func (u *UI) openFollow() {
	i := u.List.RowAt(u.List.Cursor)
	if i < 0 {
		return
	}
	r := u.S.Ix.Row(i)
	if r.Conn == 0 || u.S.Ix.Conn(int(r.Conn)) == nil {
		u.msg = "[red]the row has no iWARP connection to follow[-]"
		return
	}
	v := u.follow
	v.conn, v.dir, v.pages = r.Conn, -1, []int{i}
	if r.Kind == RowTCP || r.Kind == RowFinding {
		v.pages[0] = 0 // from the connection's start
	}
	u.fillFollow()
	u.showPage("follow")
}

// followKeys: d switches the direction shown, n and p page.
func (u *UI) followKeys(ev *tcell.EventKey) *tcell.EventKey {
	v := u.follow
	switch {
	case ev.Key() == tcell.KeyRune && ev.Rune() == 'd':
		v.dir++
		if v.dir > 1 {
			v.dir = -1
		}
		v.pages = v.pages[:1]
	case ev.Key() == tcell.KeyRune && ev.Rune() == 'n':
		if v.next < 0 {
			u.msg = "end of the stream"
			u.status.SetText(u.statusText())
			return nil
		}
		v.pages = append(v.pages, v.next)
	case ev.Key() == tcell.KeyRune && ev.Rune() == 'p':
		if len(v.pages) > 1 {
			v.pages = v.pages[:len(v.pages)-1]
		}
	default:
		return ev
	}
	u.fillFollow()
	return nil
}

// fillFollow reads the page of PDUs from v.pages' last row on.
func (u *UI) fillFollow() {
	v, ix := u.follow, u.S.Ix
	c := ix.Conn(int(v.conn))
	var b strings.Builder
	dirName := "both directions"
	if v.dir >= 0 {
		dirName = c.DirName(uint8(v.dir)) + " only"
	}
	v.SetTitle(fmt.Sprintf(" Follow MPA stream: conn %d %s <> %s, %s, page %d (d direction, n/p page, q back) ", c.ID, c.Addr[0], c.Addr[1], dirName, len(v.pages)))
	colour := [2]string{"teal", "olive"}
	shown := 0
	v.next = -1
	n := ix.Len()
	for i := v.pages[len(v.pages)-1]; i < n; i++ {
		r := ix.Row(i)
		if r.Conn != v.conn || (r.Kind != RowFPDU && r.Kind != RowMPA) || (v.dir >= 0 && int(r.Dir) != v.dir) {
			continue
		}
		if shown == followPage {
			v.next = i
			break
		}
		shown++
		d := u.loader.Load(i) // read back from the capture: this PDU only
		what := "FPDU"
		if r.Kind == RowMPA {
			what = "MPA frame"
		}
		fmt.Fprintf(&b, "[%s::b]── %s %s seq %d-%d, %d octets on the wire, frames %d-%d", colour[r.Dir&1], c.DirName(r.Dir), what, r.Seq, r.End, r.End-r.Seq, r.First, r.Last)
		if len(d.PDU.Markers) > 0 {
			fmt.Fprintf(&b, ", %d markers", len(d.PDU.Markers))
		}
		if len(d.Wire) < int(r.End-r.Seq) {
			fmt.Fprintf(&b, ", %d captured", len(d.Wire))
		}
		b.WriteString(" ──[-::-]\n")
		mark := make([]bool, len(d.Wire))
		for _, m := range d.PDU.Markers {
			for k := int(m.Pos - r.Seq); k < int(m.Pos-r.Seq)+4 && k < len(mark); k++ {
				if k >= 0 {
					mark[k] = true
				}
			}
		}
		appendFollowDump(&b, d.Wire, mark, colour[r.Dir&1])
	}
	if shown == 0 {
		b.WriteString("no PDU of this connection from here on")
	} else if v.next < 0 {
		b.WriteString("[::d]── end of the stream indexed so far ──[::-]\n")
	}
	v.SetText(b.String())
	v.ScrollToBeginning()
}

// appendFollowDump writes octets as hex and ASCII lines (offset, 16
// octets, the printable ones, as the hex pane and iwdump -x): with a
// colour, as tview tags in that colour, the octets mark says in reverse;
// without, plain text (the clipboard's hex dump).
func appendFollowDump(b *strings.Builder, w []byte, mark []bool, colour string) {
	tags := colour != ""
	for off := 0; off < len(w); off += 16 {
		line := w[off:min(off+16, len(w))]
		if tags {
			fmt.Fprintf(b, "[%s]", colour)
		}
		fmt.Fprintf(b, "%04x ", off)
		for k := 0; k < 16; k++ {
			if k == 8 {
				b.WriteByte(' ')
			}
			switch {
			case k >= len(line):
				b.WriteString("   ")
			case tags && mark[off+k]:
				fmt.Fprintf(b, " [::r]%02x[::-]", line[k])
			default:
				fmt.Fprintf(b, " %02x", line[k])
			}
		}
		b.WriteString("  ")
		for _, ch := range line {
			if ch < 0x20 || ch > 0x7e {
				ch = '.'
			}
			if ch == '[' && tags {
				b.WriteString("[[]") // tview's escape of a tag's opening
				continue
			}
			b.WriteByte(ch)
		}
		if tags {
			b.WriteString("[-]")
		}
		b.WriteByte('\n')
	}
}
