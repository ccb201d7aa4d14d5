package tui

import (
	"fmt"
	"os"
	"strings"

	"github.com/gdamore/tcell/v2"
	"github.com/rivo/tview"
)

// Theme is the colours of the screen: the colouring rules of the list (a
// Terminate, an error, a warning, an MPA frame, a Read, a Write), the
// detail tree's (severity, links) and the bar's. Every theme keeps the
// terminal's own foreground and background and picks from the sixteen
// basic colours, so it reads on the background it is meant for.
type Theme struct {
	Name                                   string
	Error, Warning, Note, MPA, Read, Write tcell.Color
	Terminate, Link, Good                  tcell.Color
	Colour                                 bool // false: no colour at all
}

// Themes: "dark" for a dark background (the bright colours), "light" for
// a light one (the dark colours), "none" for no colour (NO_COLOR): the
// cursor row is then the only one in reverse video, and marked.
var Themes = []*Theme{
	{Name: "dark", Error: tcell.ColorRed, Warning: tcell.ColorYellow, Note: tcell.ColorAqua, MPA: tcell.ColorAqua,
		Read: tcell.ColorLime, Write: tcell.ColorBlue, Terminate: tcell.ColorFuchsia, Link: tcell.ColorAqua, Good: tcell.ColorLime, Colour: true},
	{Name: "light", Error: tcell.ColorMaroon, Warning: tcell.ColorOlive, Note: tcell.ColorTeal, MPA: tcell.ColorTeal,
		Read: tcell.ColorGreen, Write: tcell.ColorNavy, Terminate: tcell.ColorPurple, Link: tcell.ColorTeal, Good: tcell.ColorGreen, Colour: true},
	{Name: "none", Error: tcell.ColorDefault, Warning: tcell.ColorDefault, Note: tcell.ColorDefault, MPA: tcell.ColorDefault,
		Read: tcell.ColorDefault, Write: tcell.ColorDefault, Terminate: tcell.ColorDefault, Link: tcell.ColorDefault, Good: tcell.ColorDefault},
}

// palette is the theme in use; colouring: the list's colouring rules are
// on (the toggle, Z).
var (
	palette   = Themes[0]
	colouring = true
)

// ThemeNames lists the themes, as --theme takes them.
func ThemeNames() string {
	var n []string
	for _, t := range Themes {
		n = append(n, t.Name)
	}
	return strings.Join(n, ", ")
}

// SetTheme picks the theme named name ("" or "auto": dark, or none
// when NO_COLOR is set). NO_COLOR wins over any theme: tcell then draws
// no colour and turns dark foregrounds into reverse video, which would
// make coloured rows look like the cursor.
func SetTheme(name string) error {
	if name == "" || name == "auto" || os.Getenv("NO_COLOR") != "" {
		name = "dark"
		if os.Getenv("NO_COLOR") != "" {
			name = "none"
		}
	}
	for _, t := range Themes {
		if t.Name == name {
			palette = t
			applyStyles()
			return nil
		}
	}
	return fmt.Errorf("unknown theme %q (want %s)", name, ThemeNames())
}

// nextTheme cycles the themes (T).
func nextTheme() {
	for i, t := range Themes {
		if t == palette {
			palette = Themes[(i+1)%len(Themes)]
			break
		}
	}
	applyStyles()
}

// applyStyles sets tview's styles: the terminal's own foreground and
// background everywhere.
func applyStyles() {
	tview.Styles.PrimitiveBackgroundColor = tcell.ColorDefault
	tview.Styles.ContrastBackgroundColor = tcell.ColorDefault
	tview.Styles.MoreContrastBackgroundColor = tcell.ColorDefault
	tview.Styles.PrimaryTextColor = tcell.ColorDefault
	tview.Styles.SecondaryTextColor = palette.Note
	tview.Styles.TertiaryTextColor = palette.Good
	tview.Styles.BorderColor = tcell.ColorDefault
	tview.Styles.TitleColor = tcell.ColorDefault
	tview.Styles.GraphicsColor = tcell.ColorDefault
	tview.Styles.InverseTextColor = tcell.ColorDefault
	tview.Styles.ContrastSecondaryTextColor = tcell.ColorDefault
}

// cursorStyle is the style of the selected row: reverse video, bold too
// without colour.
func cursorStyle() tcell.Style {
	s := tcell.StyleDefault.Reverse(true)
	if !palette.Colour {
		s = s.Bold(true)
	}
	return s
}

// Legend is the colouring rules in words (the help's last lines).
func Legend() string {
	if !palette.Colour {
		return fmt.Sprintf("Colours: none (theme %s); the cursor row is in reverse video and marked ▶.", palette.Name)
	}
	if !colouring {
		return fmt.Sprintf("Colours: theme %s, the list's colouring rules off (Z turns them on).", palette.Name)
	}
	return fmt.Sprintf("Colours (theme %s; L: next theme, Z: colouring rules off): red error finding / bad CRC, yellow warning, cyan MPA, green Read, blue Write, magenta Terminate.", palette.Name) + coloursLegend()
}

// themed puts the theme's colours in text written with tview's tags
// [red], [yellow] and [green] (the status line's words): the theme's
// error, warning and good colours, or none.
func themed(text string) string {
	if !palette.Colour {
		return strings.NewReplacer("[red]", "", "[yellow]", "", "[green]", "", "[-]", "", "[red::r]", "[::r]", "[-::-]", "[::-]").Replace(text)
	}
	tag := func(c tcell.Color) string { return "[" + c.CSS() + "]" }
	return strings.NewReplacer("[red]", tag(palette.Error), "[yellow]", tag(palette.Warning), "[green]", tag(palette.Good),
		"[red::r]", "["+palette.Error.CSS()+"::r]").Replace(text)
}
