package tui

import (
	"strings"

	"github.com/gdamore/tcell/v2"
)

// Action is what a key does.
type Action int

const (
	ActNone Action = iota
	ActFilter
	ActHelp
	ActQuit
	ActNextPane
	ActPrevPane
	ActGoto
	ActFind
	ActFindNext
	ActFindPrev
	ActMark
	ActNextMark
	ActPrevMark
	ActFollowConn
	ActFollowQueue
	ActFindings
	ActOps
	ActConns
	ActSTags
	ActGraph
	ActWrite
	ActWriteConn
	ActPause
	ActBack
	ActJump
	ActBlame
	ActToggle
	ActFold
	ActUnfold
	ActGraphUnit
	ActGraphConn
	ActCmds
	ActZoom
	ActArrange
	ActGrowList
	ActShrinkList
	ActWhole
	ActTheme
	ActColouring
	ActSort
	ActSortReverse
	ActWriteFindings
	ActTCP
	ActCopy
	ActCopyTree
	ActFollowStream
	numActions
)

// Key is one row of the key table: the keys, the action and its help
// line. The help overlay is this table; the handlers dispatch on it.
type Key struct {
	Names  string // as the help shows them
	Keys   []tcell.Key
	Runes  []rune
	Action Action
	// Where: "main" (list, tree, hex), "tree" (the tree pane only),
	// "views" (findings, operations, ...), "graph", "all".
	Where string
	Help  string
}

// Keys is the key table. Movement keys the list, tree and hex panes
// handle themselves (arrows, j/k/h/l, g/G, Home/End, PgUp/PgDn,
// Ctrl-F/Ctrl-B, mouse) are listed with ActNone.
var Keys = []Key{
	{Names: "/", Runes: []rune{'/'}, Action: ActFilter, Where: "main", Help: "display filter bar (iwdump -Y language); Enter applies, Esc cancels, Up/Down history"},
	{Names: "?", Runes: []rune{'?'}, Action: ActHelp, Where: "all", Help: "this help"},
	{Names: "q", Runes: []rune{'q'}, Action: ActQuit, Where: "all", Help: "quit (in a view: back to the list)"},
	{Names: "Tab", Keys: []tcell.Key{tcell.KeyTab}, Action: ActNextPane, Where: "main", Help: "next pane: list, tree, hex"},
	{Names: "Shift-Tab", Keys: []tcell.Key{tcell.KeyBacktab}, Action: ActPrevPane, Where: "main", Help: "previous pane"},
	{Names: ":  Ctrl-G", Runes: []rune{':'}, Keys: []tcell.Key{tcell.KeyCtrlG}, Action: ActGoto, Where: "main", Help: "go to frame number; or load FILE|N, recent, columns NAME..., time r|a|ad|e, colours"},
	{Names: "f", Runes: []rune{'f'}, Action: ActFind, Where: "all", Help: "search the list, a view, the tree or the octets (focused): text, /regexp/ or 0x hex octets"},
	{Names: "n", Runes: []rune{'n'}, Action: ActFindNext, Where: "all", Help: "next search match"},
	{Names: "N", Runes: []rune{'N'}, Action: ActFindPrev, Where: "all", Help: "previous search match"},
	{Names: "m", Runes: []rune{'m'}, Action: ActMark, Where: "main", Help: "mark or unmark the row"},
	{Names: "'", Runes: []rune{'\''}, Action: ActNextMark, Where: "main", Help: "next mark"},
	{Names: "\"", Runes: []rune{'"'}, Action: ActPrevMark, Where: "main", Help: "previous mark"},
	{Names: "c", Runes: []rune{'c'}, Action: ActFollowConn, Where: "main", Help: "follow the row's connection (again: show all)"},
	{Names: "u", Runes: []rune{'u'}, Action: ActFollowQueue, Where: "main", Help: "follow the row's queue: connection, direction, QN or tagged (again: all)"},
	{Names: "e", Runes: []rune{'e'}, Action: ActFindings, Where: "all", Help: "findings (expert info)"},
	{Names: "o", Runes: []rune{'o'}, Action: ActOps, Where: "all", Help: "RDMA operations: Reads with latency, Writes, Sends, atomics, Terminates"},
	{Names: "C", Runes: []rune{'C'}, Action: ActConns, Where: "all", Help: "connections: MPA parameters, counters"},
	{Names: "U", Runes: []rune{'U'}, Action: ActCmds, Where: "all", Help: "storage-protocol commands (NVMe-oF, iSCSI, SMB2, NFS): status, latency, octets moved"},
	{Names: "t", Runes: []rune{'t'}, Action: ActSTags, Where: "all", Help: "STags: advertised (ULP command, rping Send), used, invalidated"},
	{Names: "i", Runes: []rune{'i'}, Action: ActGraph, Where: "all", Help: "I/O graph: PDUs or octets per interval"},
	{Names: "v", Runes: []rune{'v'}, Action: ActGraphUnit, Where: "graph", Help: "I/O graph: PDUs or octets"},
	{Names: "c", Runes: []rune{'c'}, Action: ActGraphConn, Where: "graph", Help: "I/O graph: next connection (all, 1, 2, ...)"},
	{Names: "T", Runes: []rune{'T'}, Action: ActTCP, Where: "main", Help: "TCP rows: SYN, FIN, RST, bare ACKs, retransmissions (again: PDUs only)"},
	{Names: "F", Runes: []rune{'F'}, Action: ActFollowStream, Where: "main", Help: "follow the row's MPA stream: hex and ASCII, FPDU boundaries, markers; d direction, n p page"},
	{Names: "y", Runes: []rune{'y'}, Action: ActCopy, Where: "main", Help: "copy to the clipboard (OSC 52, also over ssh): the list line, the tree line (name = value), the octets"},
	{Names: "Y", Runes: []rune{'Y'}, Action: ActCopyTree, Where: "main", Help: "copy the whole tree to the clipboard (OSC 52)"},
	{Names: "w", Runes: []rune{'w'}, Action: ActWrite, Where: "main", Help: "write the shown rows' frames to a pcap/pcapng file"},
	{Names: "E", Runes: []rune{'E'}, Action: ActWriteFindings, Where: "main", Help: "save all frames as pcapng, findings as packet comments (frame.comment)"},
	{Names: "W", Runes: []rune{'W'}, Action: ActWriteConn, Where: "main", Help: "write the row's connection to a pcap/pcapng file"},
	{Names: "x", Runes: []rune{'x'}, Action: ActWhole, Where: "all", Help: "the selected line whole, wrapped (a list row, tree line or view line cut with …)"},
	{Names: "\\", Runes: []rune{'\\'}, Action: ActZoom, Where: "main", Help: "zoom the focused pane to the whole page (again: back)"},
	{Names: "|", Runes: []rune{'|'}, Action: ActArrange, Where: "main", Help: "detail and octets: side by side when wide enough, side by side, stacked"},
	{Names: "+  -", Runes: []rune{'+', '='}, Action: ActGrowList, Where: "main", Help: "more (+) or fewer (-) lines for the list"},
	{Names: "", Runes: []rune{'-'}, Action: ActShrinkList, Where: "main", Help: ""},
	{Names: "p", Runes: []rune{'p'}, Action: ActPause, Where: "main", Help: "live: pause or resume the list (capture goes on)"},
	{Names: "Esc", Keys: []tcell.Key{tcell.KeyEscape}, Action: ActBack, Where: "all", Help: "back to the list; closes a bar or this help"},
	{Names: "Enter  Space", Keys: []tcell.Key{tcell.KeyEnter}, Runes: []rune{' '}, Action: ActToggle, Where: "tree", Help: "tree: fold or unfold the line; on a line that names a frame, go there"},
	{Names: "Left h", Keys: []tcell.Key{tcell.KeyLeft}, Runes: []rune{'h'}, Action: ActFold, Where: "tree", Help: "tree: fold the line (on a field: its protocol)"},
	{Names: "Right l", Keys: []tcell.Key{tcell.KeyRight}, Runes: []rune{'l'}, Action: ActUnfold, Where: "tree", Help: "tree: unfold the line"},
	{Names: "Enter", Keys: []tcell.Key{tcell.KeyEnter}, Action: ActJump, Where: "views", Help: "views: go to the frame the line names"},
	{Names: "s", Runes: []rune{'s'}, Action: ActSort, Where: "views", Help: "views: sort by the next column (after the last: the view's own order)"},
	{Names: "S", Runes: []rune{'S'}, Action: ActSortReverse, Where: "views", Help: "views: reverse the order"},
	{Names: "L", Runes: []rune{'L'}, Action: ActTheme, Where: "all", Help: "next theme: dark, light, none (--theme)"},
	{Names: "Z", Runes: []rune{'Z'}, Action: ActColouring, Where: "all", Help: "the list's colouring rules on or off (yours, :colours, and the built-in ones)"},
	{Names: "b", Runes: []rune{'b'}, Action: ActBlame, Where: "views", Help: "operations, findings: go to the frame a Terminate blames; commands: to the response"},
	{Names: "j k  Up Down", Action: ActNone, Where: "all", Help: "move (list, tree, views); in hex: by 16 octets"},
	{Names: "h l  Left Right", Action: ActNone, Where: "all", Help: "hex: move by one octet (selects the field it is in)"},
	{Names: "g G  Home End", Action: ActNone, Where: "all", Help: "first, last row"},
	{Names: "PgUp PgDn  Ctrl-B Ctrl-F", Action: ActNone, Where: "all", Help: "page up, down"},
	{Names: "mouse", Action: ActNone, Where: "all", Help: "click selects a row, a field or an octet; wheel scrolls"},
}

// Lookup returns the action of ev in context where: "main" (list, hex),
// "tree" (the main keys and the tree's), "views", "graph" or "help".
func Lookup(ev *tcell.EventKey, where string) Action {
	for i := range Keys {
		k := &Keys[i]
		if k.Action == ActNone || (k.Where != "all" && k.Where != where && !(k.Where == "main" && where == "tree")) {
			continue
		}
		if ev.Key() == tcell.KeyRune {
			for _, r := range k.Runes {
				if r == ev.Rune() && ev.Modifiers()&(tcell.ModAlt|tcell.ModCtrl) == 0 {
					return k.Action
				}
			}
			continue
		}
		for _, kk := range k.Keys {
			if kk == ev.Key() {
				return k.Action
			}
		}
	}
	return ActNone
}

// HelpText is the help overlay: the key table.
func HelpText() string {
	var b strings.Builder
	b.WriteString("iwtui keys\n\n")
	for _, k := range Keys {
		if k.Help == "" {
			continue // the second key of a pair the line before explains
		}
		b.WriteString("  ")
		b.WriteString(k.Names)
		b.WriteString(strings.Repeat(" ", max(1, 26-len(k.Names))))
		b.WriteString(k.Help)
		b.WriteByte('\n')
	}
	b.WriteString("\n" + Legend() + "\nEsc or ? closes this help.")
	return b.String()
}
