package tui

import (
	"strings"
	"testing"

	"github.com/gdamore/tcell/v2"
)

// TestNoColorCursor (issue 29 bug 8): with NO_COLOR set the theme is
// "none": no cell of the list, tree or a view has a colour (tcell, told
// NO_COLOR, draws a dark foreground in reverse video, which made coloured
// rows look like the cursor), the cursor row is the only one in reverse
// video, and it is marked.
func TestNoColorCursor(t *testing.T) {
	t.Cleanup(func() { SetTheme("dark") }) // after NO_COLOR is restored
	t.Setenv("NO_COLOR", "1")
	if err := SetTheme("dark"); err != nil {
		t.Fatal(err)
	}
	if palette.Name != "none" {
		t.Fatalf("NO_COLOR: theme %s", palette.Name)
	}
	s := newScreen(t, termCapture(t))
	for i := 0; i < 5; i++ {
		s.key(tcell.KeyDown)
	}
	for _, page := range []string{"main", "ops"} {
		if page != "main" {
			s.runes("o")
		}
		text := s.text()
		cur := -1
		for y := 0; y < s.h; y++ {
			reversed := false
			for x := 0; x < s.w; x++ {
				_, _, st, _ := s.sim.GetContent(x, y)
				fg, bg, attr := st.Decompose()
				if fg != tcell.ColorDefault || bg != tcell.ColorDefault {
					t.Fatalf("%s: cell %d,%d coloured %v on %v", page, x, y, fg, bg)
				}
				if attr&tcell.AttrReverse != 0 && x > 0 && x < s.w-1 {
					reversed = true
				}
			}
			if reversed && y < s.h-1 { // the status line's PAUSED-style words aside
				if cur >= 0 && page == "main" && y < s.h/2 {
					t.Fatalf("%s: rows %d and %d both in reverse video", page, cur, y)
				}
				if cur < 0 {
					cur = y
				}
			}
		}
		if cur < 0 {
			t.Fatalf("%s: no row in reverse video", page)
		}
		if page == "main" && !strings.Contains(strings.Split(text, "\n")[cur], "▶") {
			t.Fatalf("the cursor row is not marked: %q", strings.Split(text, "\n")[cur])
		}
	}
}

// TestThemes: --theme names dark, light and none; L cycles them, Z turns
// the list's colouring rules off and on; dark and light colour a
// Terminate, a Read and an error each its own way.
func TestThemes(t *testing.T) {
	t.Setenv("NO_COLOR", "")
	defer SetTheme("dark")
	SetTheme("dark")
	if err := SetTheme("sepia"); err == nil || !strings.Contains(err.Error(), "dark, light, none") {
		t.Fatalf("unknown theme: %v", err)
	}
	s := newScreen(t, termCapture(t))
	seen := map[string]bool{}
	for range Themes {
		th := palette
		seen[th.Name] = true
		if th.Colour {
			cs := map[tcell.Color]bool{th.Error: true, th.Warning: true, th.MPA: true, th.Read: true, th.Write: true, th.Terminate: true}
			if len(cs) != 6 || cs[tcell.ColorDefault] {
				t.Errorf("theme %s: the six rules share colours", th.Name)
			}
		}
		s.runes("L")
	}
	if len(seen) != 3 || palette.Name != "dark" {
		t.Fatalf("T cycled %v, now %s", seen, palette.Name)
	}
	r := Row{Kind: RowMPA}
	s.runes("Z")
	if rowColor(&r) != tcell.ColorDefault || !strings.Contains(s.u.msg, "off") {
		t.Fatal("Z: the colouring rules still colour")
	}
	s.runes("Z")
	if rowColor(&r) != palette.MPA {
		t.Fatal("Z again: the colouring rules are off")
	}
}
