package tui

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/iwkit/iwkit/render"
	"github.com/rivo/tview"
)

// Settings are what iwtui keeps from one run to the next, in
// $XDG_CONFIG_HOME/iwkit/iwtui.json (~/.config/iwkit/iwtui.json without
// it): the list's columns, the time format, the theme, the display
// filters applied (the bar's history) and the files opened (:load's
// recent files). Flags override them for one run.
type Settings struct {
	Columns    []string `json:"columns,omitempty"`     // the list's columns, in order (Columns names them)
	TimeFormat string   `json:"time_format,omitempty"` // as iwdump -t: r, a, ad, e
	Theme      string   `json:"theme,omitempty"`       // dark, light, none
	Filters    []string `json:"filters,omitempty"`     // display filters applied, oldest first
	Recent     []string `json:"recent,omitempty"`      // files opened, newest first
}

const (
	maxFilters = 100
	maxRecent  = 20
)

// ConfigPath is the settings file ("" when neither XDG_CONFIG_HOME nor
// a home directory is known).
func ConfigPath() string {
	dir := os.Getenv("XDG_CONFIG_HOME")
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil || home == "" {
			return ""
		}
		dir = filepath.Join(home, ".config")
	}
	return filepath.Join(dir, "iwkit", "iwtui.json")
}

// LoadSettings reads the settings file (none: the defaults). A file that
// does not parse is an error that names it.
func LoadSettings() (Settings, error) {
	var st Settings
	path := ConfigPath()
	if path == "" {
		return st, nil
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return st, nil
	}
	if err != nil {
		return st, err
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return st, fmt.Errorf("%s: %v", path, err)
	}
	return st, st.Check()
}

// Check reports a column, time format or theme the settings name that
// iwtui does not know.
func (st *Settings) Check() error {
	if _, err := columnIndexes(st.Columns); err != nil {
		return fmt.Errorf("%s: columns: %v", ConfigPath(), err)
	}
	if st.TimeFormat != "" && !slices.Contains(render.TimeFormats, st.TimeFormat) {
		return fmt.Errorf("%s: time_format %q: want one of %s", ConfigPath(), st.TimeFormat, strings.Join(render.TimeFormats, ", "))
	}
	for _, t := range Themes {
		if st.Theme == "" || st.Theme == t.Name {
			return nil
		}
	}
	return fmt.Errorf("%s: theme %q: want one of %s", ConfigPath(), st.Theme, ThemeNames())
}

// save writes the settings, merging the filters and recent files another
// iwtui wrote meanwhile; written whole to a temporary file and renamed, so
// a reader never sees half of it.
func (st *Settings) save() error {
	path := ConfigPath()
	if path == "" {
		return nil
	}
	if old, err := LoadSettings(); err == nil {
		for _, f := range st.Filters {
			old.addFilter(f)
		}
		st.Filters = old.Filters
		for i := len(st.Recent) - 1; i >= 0; i-- {
			old.addRecent(st.Recent[i])
		}
		st.Recent = old.Recent
	}
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".iwtui-*.json")
	if err != nil {
		return err
	}
	if _, err := tmp.Write(append(b, '\n')); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// addFilter appends a filter to the history (most recent last, no
// repeats, the oldest dropped past maxFilters).
func (st *Settings) addFilter(expr string) {
	if expr == "" {
		return
	}
	st.Filters = append(slices.DeleteFunc(st.Filters, func(s string) bool { return s == expr }), expr)
	if len(st.Filters) > maxFilters {
		st.Filters = st.Filters[len(st.Filters)-maxFilters:]
	}
}

// addRecent puts a file first in the recent files (by its absolute path).
func (st *Settings) addRecent(path string) {
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	st.Recent = append([]string{path}, slices.DeleteFunc(st.Recent, func(s string) bool { return s == path })...)
	if len(st.Recent) > maxRecent {
		st.Recent = st.Recent[:maxRecent]
	}
}

// columnIndexes maps column names (Columns) to their indexes; none: all
// in their own order.
func columnIndexes(names []string) ([]int, error) {
	if len(names) == 0 {
		return []int{0, 1, 2, 3, 4}, nil
	}
	var out []int
	for _, n := range names {
		i := slices.IndexFunc(columns, func(c string) bool {
			return strings.EqualFold(c, n) || strings.EqualFold(strings.TrimSuffix(c, "."), n)
		})
		if i < 0 {
			return nil, fmt.Errorf("no column %q (the columns: %s)", n, strings.Join(columns, ", "))
		}
		if slices.Contains(out, i) {
			return nil, fmt.Errorf("column %q twice", n)
		}
		out = append(out, i)
	}
	return out, nil
}

// Use applies the settings (columns, time format, filter history; the
// theme is SetTheme's) and keeps them: the filters applied and the file
// open are saved back to the settings file.
func (u *UI) Use(st Settings) error {
	if err := st.Check(); err != nil {
		return err
	}
	u.settings, u.persist = st, true
	u.cols, _ = columnIndexes(st.Columns)
	u.S.Ix.mu.Lock()
	u.S.Ix.timeFormat = st.TimeFormat
	u.S.Ix.mu.Unlock()
	u.List.History = append([]string(nil), st.Filters...)
	if u.S.live == nil {
		for _, f := range u.S.Ix.store.sources {
			u.settings.addRecent(f)
		}
	}
	u.msg, _, _ = u.loadColours()
	return u.saveSettings()
}

// loadColours (re)reads the colouring rules file and applies its rules
// (colours.go); it returns them, the bad lines, and what the status line
// says: the first bad line, and how many there were.
func (u *UI) loadColours() (string, []ColourRule, []error) {
	rules, errs := LoadColours()
	userColours.Store(&rules)
	u.S.ApplyColours(rules)
	switch len(errs) {
	case 0:
		return "", rules, errs
	case 1:
		return "[red]" + tview.Escape(errs[0].Error()) + "[-]", rules, errs
	}
	return fmt.Sprintf("[red]%s; %d more bad lines (:colours lists them)[-]", tview.Escape(errs[0].Error()), len(errs)-1), rules, errs
}

func (u *UI) saveSettings() error {
	if !u.persist {
		return nil
	}
	return u.settings.save()
}

// command runs what was typed in the go-to bar after ':' when it is not
// a frame number: load FILE (or the number of a recent file), recent,
// columns NAME..., time FORMAT. It returns the message for the status
// line.
func (u *UI) command(text string) string {
	word, arg, _ := strings.Cut(text, " ")
	arg = strings.TrimSpace(arg)
	switch word {
	case "load", "l", "e":
		if arg == "" {
			return "[red]:load FILE, or :load N for the Nth of :recent[-]"
		}
		if n, err := strconv.Atoi(arg); err == nil && n >= 1 && n <= len(u.settings.Recent) {
			arg = u.settings.Recent[n-1]
		}
		if _, err := os.Stat(arg); err != nil {
			return "[red]" + tview.Escape(err.Error()) + "[-]"
		}
		u.LoadNext = arg
		u.App.Stop()
		return "loading " + tview.Escape(arg)
	case "recent":
		var b strings.Builder
		b.WriteString("Recent files (:load N opens the Nth):\n\n")
		for i, f := range u.settings.Recent {
			fmt.Fprintf(&b, "%3d  %s\n", i+1, tview.Escape(f))
		}
		if len(u.settings.Recent) == 0 {
			b.WriteString("  none yet\n")
		}
		u.showText(" Recent files ", b.String())
		return ""
	case "columns", "cols":
		names := strings.Fields(arg)
		cols, err := columnIndexes(names)
		if err != nil {
			return "[red]" + tview.Escape(err.Error()) + "[-]"
		}
		u.cols, u.settings.Columns = cols, names
		u.saveSettings()
		return "columns: " + tview.Escape(strings.Join(names, " "))
	case "colours", "colors":
		msg, rules, errs := u.loadColours()
		var b strings.Builder
		fmt.Fprintf(&b, "Colouring rules from %s (Wireshark's colorfilters: %s), tried in order before the built-in ones; the first that matches colours the row. Z turns all colouring off.\n\n",
			tview.Escape(ColoursPath()), tview.Escape("@NAME@FILTER@[BG][FG]"))
		for _, r := range rules {
			fmt.Fprintf(&b, "%4d  %s%s[-:-]  %s\n", r.Line, r.tag(), tview.Escape(r.Name), tview.Escape(r.Expr))
		}
		if len(rules) == 0 {
			b.WriteString("  no rules\n")
		}
		for _, err := range errs {
			fmt.Fprintf(&b, "\n[red]%s[-]", tview.Escape(err.Error()))
		}
		u.showText(" Colouring rules ", b.String())
		if msg == "" {
			msg = fmt.Sprintf("%d colouring rules loaded", len(rules))
		}
		return msg
	case "time", "t":
		if !slices.Contains(render.TimeFormats, arg) {
			return "[red]:time " + strings.Join(render.TimeFormats, "|") + " (as iwdump -t)[-]"
		}
		u.S.Ix.mu.Lock()
		u.S.Ix.timeFormat = arg
		u.S.Ix.mu.Unlock()
		u.settings.TimeFormat = arg
		u.saveSettings()
		return "time format " + arg
	}
	return "[red]not a frame number or a command (load FILE, recent, columns NAME..., time FORMAT, colours)[-]"
}
