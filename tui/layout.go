package tui

import (
	"github.com/gdamore/tcell/v2"
	"github.com/rivo/tview"
)

// hexWidth is the octets pane's width: offset, 16 octets in hex, 16 in
// ASCII, borders.
const hexWidth = 6 + 16*3 + 2 + 16 + 3

// Layout says how the main page arranges its three panes, as termshark's
// keys do: '|' cycles the arrangement of the detail and octets panes,
// '\' zooms the focused pane to the whole page, '+' and '-' move the line
// between the list and the panes below it.
type Layout struct {
	Arrange Arrange
	Zoom    bool
	// List is the list's share of the page's height in ninths (1..8); the
	// detail and octets panes below it get the rest.
	List int
}

// Arrange is the arrangement of the detail and octets panes.
type Arrange uint8

const (
	// ArrangeAuto puts the octets beside the detail when the detail keeps
	// at least minTreeWidth columns, and under it otherwise (80 columns).
	ArrangeAuto Arrange = iota
	ArrangeSide
	ArrangeStacked
)

func (a Arrange) String() string {
	return [...]string{"auto", "side by side", "stacked"}[a]
}

// minTreeWidth is the narrowest detail pane ArrangeAuto puts beside the
// octets.
const minTreeWidth = 40

// mainPage is the main page's flex (the list, the detail and octets panes,
// the bar and the status line); it arranges the panes for its width each
// time it is drawn, before the flex lays them out.
type mainPage struct {
	*tview.Flex
	u *UI
}

func (p *mainPage) Draw(screen tcell.Screen) {
	_, _, w, _ := p.GetRect()
	p.u.arrange(w)
	p.Flex.Draw(screen)
}

// arrange sizes the panes for the layout, the focused pane and a width of
// w columns for the detail and octets panes.
func (u *UI) arrange(w int) {
	l := &u.layout
	list, below := l.List, 9-l.List
	tree, hex := 1, 0
	if l.Zoom {
		list, below = 0, 1
		switch u.pane {
		case 0:
			list, below = 1, 0
		case 1:
			tree, hex = 1, -1
		case 2:
			tree, hex = 0, 1
		}
	}
	u.main.ResizeItem(u.table, 0, list)
	u.main.ResizeItem(u.split, 0, below)
	side := l.Arrange == ArrangeSide || (l.Arrange == ArrangeAuto && w >= hexWidth+minTreeWidth)
	switch {
	case hex < 0: // the detail zoomed
		u.split.ResizeItem(u.hex, 0, 0)
	case hex > 0: // the octets zoomed
		u.split.ResizeItem(u.hex, 0, 1)
	case side:
		u.split.SetDirection(tview.FlexColumn)
		u.split.ResizeItem(u.hex, hexWidth, 0)
	default:
		u.split.SetDirection(tview.FlexRow)
		u.split.ResizeItem(u.hex, 0, 2)
		tree = 3
	}
	u.split.ResizeItem(u.tree, 0, tree)
}

// layoutAction changes the layout for a key of the table.
func (u *UI) layoutAction(a Action) {
	l := &u.layout
	switch a {
	case ActZoom:
		l.Zoom = !l.Zoom
	case ActArrange:
		l.Arrange = (l.Arrange + 1) % 3
		u.msg = "panes: " + l.Arrange.String()
	case ActGrowList:
		l.List = min(l.List+1, 8)
	case ActShrinkList:
		l.List = max(l.List-1, 1)
	}
}
