package tui

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gdamore/tcell/v2"
)

// TestParseColours: the rules of a colorfilters file in Wireshark's
// format (testdata/colorfilters): comments and switched-off rules are
// skipped, RGB pairs read background first with 16-bit components, a
// theme colour on the terminal's background is kept by name, and each bad
// line is an error that names the file, the line and the rule: a filter
// iwkit's compiler refuses (Wireshark's tcp.analysis), an RGB text colour
// without a background.
func TestParseColours(t *testing.T) {
	f, err := os.Open("testdata/colorfilters")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rules, errs := ParseColours(f, "colorfilters")
	var got []string
	for _, r := range rules {
		got = append(got, fmt.Sprintf("%d %s %q fg=%s bg=%s role=%s", r.Line, r.Name, r.Expr, css(r.FG), css(r.BG), r.Role))
	}
	want := []string{
		`3 Terminate "rdmap.opcode == 7" fg=#800000 bg=#FFEEB6 role=`,
		`6 Send "rdmap.opcode == 3" fg=default bg=default role=good`,
		`8 RDMA Write "rdmap.opcode == 0 && ddp.tagged" fg=#12272E bg=#D9EBFF role=`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("rules:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if len(errs) != 2 {
		t.Fatalf("errors %v, want 2", errs)
	}
	for i, want := range []string{`colorfilters line 4: rule "Not iWARP": filter: column 1: unknown field "tcp.analysis.flags"`, `colorfilters line 7: rule "Pale text": an r,g,b text colour needs an r,g,b background`} {
		if !strings.Contains(errs[i].Error(), want) || !strings.Contains(errs[i].Error(), "skipped") {
			t.Errorf("error %d: %v, want %q", i, errs[i], want)
		}
	}
	for _, bad := range []string{"Terminate@rdmap.opcode == 7@[0,0,0][1,1,1]", "@X@rdmap.opcode == 7", "@X@rdmap.opcode == 7@[0,0,0]",
		"@X@rdmap.opcode == 7@[0,0,70000][1,1,1]", "@X@@[0,0,0][1,1,1]", "@X@rdmap.opcode == 7@[default][mauve]", "@X@rdmap.opcode == 7@[0,0,0][error]",
		"@X@rdmap.opcode == 7@[0,0,0][1,1,1", "@X@(@[0,0,0][1,1,1]"} {
		rules, errs := ParseColours(strings.NewReader(bad), "f")
		if len(rules) != 0 || len(errs) != 1 || !strings.HasPrefix(errs[0].Error(), "f line 1: ") {
			t.Errorf("%q: rules %v, errors %v", bad, rules, errs)
		}
	}
}

// colourLines is the screen's text and, for each line of the list, the
// colours of its first cell (text / background): what a golden screen
// without colours would not show.
func (s *screen) colourLines() string {
	text := s.text()
	cells, w, _ := s.sim.GetContents()
	var b strings.Builder
	b.WriteString(text)
	b.WriteString("-- colours of the list's lines (text / background)\n")
	for y := 1; y < s.h; y++ {
		if c := cells[y*w]; len(c.Runes) == 0 || c.Runes[0] != '║' {
			break // past the list's box
		}
		fg, bg, _ := cells[y*w+1].Style.Decompose()
		if fg != tcell.ColorDefault || bg != tcell.ColorDefault {
			fmt.Fprintf(&b, "%2d %s / %s\n", y, css(fg), css(bg))
		}
	}
	return b.String()
}

func css(c tcell.Color) string {
	if c == tcell.ColorDefault {
		return "default"
	}
	return c.CSS()
}

// waitColours waits for the colouring rules' pass over the capture.
func waitColours(t *testing.T, s *Session) {
	c := s.colours.Load()
	if c == nil {
		t.Fatal("no colouring rules applied")
	}
	for _, fr := range c.runs {
		for {
			if _, done, err := fr.Status(); done {
				if err != nil {
					t.Fatal(err)
				}
				break
			}
			time.Sleep(time.Millisecond)
		}
	}
}

// TestColourRules: the rules of a colorfilters file in the config
// directory colour the list at 80×24 before the built-in rules (a
// Terminate in the rule's pair instead of magenta, Sends in the theme's
// good colour), the bad lines are reported in the status line, the
// legend names the rules, Z and the none theme turn them off, and
// :colours reloads the file.
func TestColourRules(t *testing.T) {
	t.Setenv("NO_COLOR", "")
	defer SetTheme("dark")
	SetTheme("dark")
	defer userColours.Store(nil)
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	rules, err := os.ReadFile("testdata/colorfilters")
	if err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Dir(ColoursPath()), 0o755)
	if err := os.WriteFile(ColoursPath(), rules, 0o644); err != nil {
		t.Fatal(err)
	}
	ses, err := Open(Config{File: termCapture(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ses.Close)
	ses.Wait()
	ses.Name = "term.pcap"
	s := screenSized(t, ses, 80, 24)
	if err := s.u.Use(Settings{}); err != nil {
		t.Fatal(err)
	}
	waitColours(t, ses)
	s.u.Refresh()
	if !strings.Contains(s.u.msg, `colorfilters line 4: rule "Not iWARP"`) || !strings.Contains(s.u.msg, "1 more bad lines") {
		t.Errorf("status: %q", s.u.msg)
	}
	status := s.text()
	if !strings.Contains(status, "colorfilters line 4") {
		t.Errorf("the status line does not show the bad rule:\n%s", status)
	}
	// The first Terminate on the screen.
	term := -1
	for i := 0; i < ses.Ix.Len(); i++ {
		if r := ses.Ix.Row(i); r.Kind == RowFPDU && r.Op == 7 {
			term = i
			break
		}
	}
	if term < 0 {
		t.Fatal("no Terminate in the capture")
	}
	s.u.GoFrame(int(ses.Ix.Row(term).First))
	s.runes("jjj") // the Terminate off the cursor row (reverse video)
	got := s.colourLines()
	if *update {
		os.WriteFile("testdata/colour-rules-80x24.golden", []byte(got), 0o644)
	} else if want, err := os.ReadFile("testdata/colour-rules-80x24.golden"); err != nil || got != string(want) {
		t.Errorf("screen differs from testdata/colour-rules-80x24.golden (%v):\n%s", err, got)
	}
	pair := tcell.NewRGBColor(0x80, 0, 0).CSS() + " / " + tcell.NewRGBColor(0xff, 0xee, 0xb6).CSS()
	if !strings.Contains(got, pair) || !strings.Contains(got, palette.Good.CSS()+" / default") {
		t.Errorf("no row in the rules' colours (%s; %s on default)", pair, palette.Good.CSS())
	}
	if !strings.Contains(HelpText(), "Your colouring rules, tried first") || !strings.Contains(HelpText(), "Terminate, Send, RDMA Write.") {
		t.Errorf("legend: %s", Legend())
	}

	s.runes("Z")
	if off := s.colourLines(); strings.Contains(off, pair) {
		t.Error("Z: the rules still colour")
	}
	s.runes("Z")
	SetTheme("none")
	if none := s.colourLines(); strings.Contains(none, pair) {
		t.Error("theme none: the rules still colour")
	}
	SetTheme("dark")

	// :colours reloads the file: one rule now, no bad line.
	os.WriteFile(ColoursPath(), []byte("@Writes@rdmap.opcode == 0@[0,0,0][65535,65535,65535]\n"), 0o644)
	s.runes(":colours")
	s.key(tcell.KeyEnter)
	waitColours(t, ses)
	if page := s.u.whole.GetText(true); s.u.msg != "1 colouring rules loaded" || !strings.Contains(page, "Writes") || !strings.Contains(page, "@NAME@FILTER@[BG][FG]") {
		t.Errorf(":colours: status %q, page %q", s.u.msg, s.u.whole.GetText(true))
	}
	if again := s.colourLines(); strings.Contains(again, pair) {
		t.Error(":colours: the old rules still colour")
	}
}
