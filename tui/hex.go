package tui

import (
	"fmt"

	"github.com/gdamore/tcell/v2"
	"github.com/rivo/tview"
)

// hexView shows a PDU's octets, 16 a line, with the selected field's
// octets lit up and a cursor; moving the cursor selects the field there.
type hexView struct {
	*tview.Box
	data     []byte
	hiOff    int
	hiLen    int
	cursor   int
	top      int // first line shown
	onCursor func(off int)
}

func newHexView() *hexView {
	h := &hexView{Box: tview.NewBox()}
	h.SetBorder(true).SetTitle(" Octets ").SetTitleAlign(tview.AlignLeft)
	return h
}

func (h *hexView) SetData(b []byte) {
	h.data, h.cursor, h.top, h.hiOff, h.hiLen = b, 0, 0, 0, 0
}

// Highlight lights up octets [off, off+n) and scrolls them into view.
func (h *hexView) Highlight(off, n int) {
	h.hiOff, h.hiLen = off, n
	if n > 0 {
		h.cursor = off
	}
	h.scrollTo(h.cursor / 16)
}

func (h *hexView) scrollTo(line int) {
	_, _, _, height := h.GetInnerRect()
	if height <= 0 {
		height = 1
	}
	if line < h.top {
		h.top = line
	}
	if line >= h.top+height {
		h.top = line - height + 1
	}
}

const hexDigitsUp = "0123456789abcdef"

func (h *hexView) Draw(screen tcell.Screen) {
	h.DrawForSubclass(screen, h)
	x, y, w, height := h.GetInnerRect()
	plain := tcell.StyleDefault
	lit := plain.Reverse(true)
	cur := plain.Underline(true).Bold(true)
	for ln := 0; ln < height; ln++ {
		off := (h.top + ln) * 16
		if off >= len(h.data) {
			break
		}
		tview.Print(screen, fmt.Sprintf("%04x", off), x, y+ln, 4, tview.AlignLeft, tcell.ColorDefault)
		for i := 0; i < 16 && off+i < len(h.data); i++ {
			o := off + i
			st := plain
			if o >= h.hiOff && o < h.hiOff+h.hiLen {
				st = lit
			}
			if o == h.cursor && h.HasFocus() {
				st = cur
			}
			c := h.data[o]
			col := x + 6 + i*3 + i/8
			if col+1 < x+w {
				screen.SetContent(col, y+ln, rune(hexDigitsUp[c>>4]), nil, st)
				screen.SetContent(col+1, y+ln, rune(hexDigitsUp[c&15]), nil, st)
			}
			ac := x + 6 + 16*3 + 2 + i
			if ac < x+w {
				r := rune(c)
				if c < 0x20 || c > 0x7e {
					r = '.'
				}
				screen.SetContent(ac, y+ln, r, nil, st)
			}
		}
	}
}

func (h *hexView) move(d int) {
	if len(h.data) == 0 {
		return
	}
	h.cursor = min(max(h.cursor+d, 0), len(h.data)-1)
	h.scrollTo(h.cursor / 16)
	if h.onCursor != nil {
		h.onCursor(h.cursor)
	}
}

func (h *hexView) InputHandler() func(event *tcell.EventKey, setFocus func(p tview.Primitive)) {
	return h.WrapInputHandler(func(ev *tcell.EventKey, setFocus func(p tview.Primitive)) {
		switch ev.Key() {
		case tcell.KeyLeft:
			h.move(-1)
		case tcell.KeyRight:
			h.move(1)
		case tcell.KeyUp:
			h.move(-16)
		case tcell.KeyDown:
			h.move(16)
		case tcell.KeyHome:
			h.move(-len(h.data))
		case tcell.KeyEnd:
			h.move(len(h.data))
		case tcell.KeyPgUp:
			h.move(-16 * 8)
		case tcell.KeyPgDn:
			h.move(16 * 8)
		case tcell.KeyRune:
			switch ev.Rune() {
			case 'h':
				h.move(-1)
			case 'l':
				h.move(1)
			case 'k':
				h.move(-16)
			case 'j':
				h.move(16)
			case 'g':
				h.move(-len(h.data))
			case 'G':
				h.move(len(h.data))
			}
		}
	})
}

func (h *hexView) MouseHandler() func(action tview.MouseAction, event *tcell.EventMouse, setFocus func(p tview.Primitive)) (bool, tview.Primitive) {
	return h.WrapMouseHandler(func(action tview.MouseAction, event *tcell.EventMouse, setFocus func(p tview.Primitive)) (bool, tview.Primitive) {
		mx, my := event.Position()
		if !h.InRect(mx, my) {
			return false, nil
		}
		switch action {
		case tview.MouseLeftClick:
			setFocus(h)
			x, y, _, _ := h.GetInnerRect()
			col := mx - x - 6
			i := -1
			if col >= 0 && col < 16*3+1 {
				i = (col - col/25) / 3
			} else if a := mx - x - 6 - 16*3 - 2; a >= 0 && a < 16 {
				i = a
			}
			if i >= 0 && i < 16 {
				if o := (h.top+my-y)*16 + i; o < len(h.data) {
					h.move(o - h.cursor)
				}
			}
			return true, nil
		case tview.MouseScrollUp:
			h.top = max(h.top-1, 0)
			return true, nil
		case tview.MouseScrollDown:
			if (h.top+1)*16 < len(h.data) {
				h.top++
			}
			return true, nil
		}
		return false, nil
	})
}
