package tui

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gdamore/tcell/v2"
)

// TestSettingsSurviveRestart (issue 29 misses 6): the filters applied go
// to $XDG_CONFIG_HOME/iwkit/iwtui.json and the next screen's bar recalls
// them with Up; :columns chooses and orders the list's columns, :time
// sets the time format (iwdump -t's, written by render), both kept for
// the next run; :recent lists the files opened, :load N names the one
// the command opens next.
func TestSettingsSurviveRestart(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	path := termCapture(t)
	st, err := LoadSettings()
	if err != nil {
		t.Fatal(err)
	}
	s := newScreen(t, path)
	if err := s.u.Use(st); err != nil {
		t.Fatal(err)
	}
	s.runes("/ddp.last")
	s.key(tcell.KeyEnter)
	s.runes(":columns Time No. Summary")
	s.key(tcell.KeyEnter)
	s.runes(":time ad")
	s.key(tcell.KeyEnter)
	head := strings.Fields(strings.Split(s.text(), "\n")[1])
	if len(head) < 4 || head[1] != "Time" || head[2] != "No." || head[3] != "Summary" {
		t.Fatalf("header after :columns: %q", head)
	}
	if b, err := os.ReadFile(filepath.Join(os.Getenv("XDG_CONFIG_HOME"), "iwkit", "iwtui.json")); err != nil || !strings.Contains(string(b), `"ddp.last"`) {
		t.Fatalf("settings file: %s %v", b, err)
	}

	// The next run.
	st, err = LoadSettings()
	if err != nil {
		t.Fatal(err)
	}
	s2 := newScreen(t, path)
	if err := s2.u.Use(st); err != nil {
		t.Fatal(err)
	}
	s2.runes("/")
	s2.key(tcell.KeyUp)
	if got := s2.u.bar.GetText(); got != "ddp.last" {
		t.Fatalf("Up after a restart recalls %q", got)
	}
	s2.key(tcell.KeyEscape)
	lines := strings.Split(s2.text(), "\n")
	if f := strings.Fields(lines[1]); len(f) < 2 || f[1] != "Time" {
		t.Fatalf("columns not kept: %q", lines[1])
	}
	if !strings.Contains(lines[2], "-") || !strings.Contains(lines[2], ":") { // 2026-... 12:00:00.000000
		t.Fatalf("time format ad not kept: %q", lines[2])
	}
	s2.runes(":recent")
	s2.key(tcell.KeyEnter)
	abs, _ := filepath.Abs(path)
	if !strings.Contains(s2.text(), "1  "+abs) {
		t.Fatalf(":recent does not list %s:\n%s", abs, s2.text())
	}
	s2.key(tcell.KeyEscape)
	s2.runes(":load 1")
	s2.key(tcell.KeyEnter)
	if s2.u.LoadNext != abs {
		t.Fatalf(":load 1: LoadNext %q, want %q", s2.u.LoadNext, abs)
	}
	s2.runes(":columns Nope")
	s2.key(tcell.KeyEnter)
	if !strings.Contains(s2.u.msg, `no column "Nope"`) {
		t.Fatalf(":columns Nope: %q", s2.u.msg)
	}
}
