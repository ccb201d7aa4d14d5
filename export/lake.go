package export

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// The commit protocol (docs/export.md "The export: layout"). A writer writes
// every table's part of a capture set under a hidden temporary name
// (.part-<writer>.parquet.tmp, held locked while the writer lives), then
// renames them to part-<commit>.parquet, the captures part last: that
// rename is the commit, and the captures row is its record. Of the
// commits of a capture set, the greatest <commit> (UTC time of the
// commit, then 64 random bits) is the live copy; a data part is live when
// its <commit> is that one. Everything else is garbage: parts of older
// commits, parts of newer commits whose record never came (a writer
// that died between its renames; an unfinished commit), and temporary
// files whose writer is gone (orphans). Readers (iwsql, ReadTable) see
// the live parts only, whatever the order writers finish, crash or
// retry in, and whether the garbage has been removed yet.

// orphanGrace is how old an unlocked temporary file, or a part of an
// unfinished commit, must be before it is garbage: a writer takes its
// lock just after creating the file, and renames its parts one after the
// other within milliseconds.
const orphanGrace = time.Minute

// Stored is what a directory holds of one capture set.
type Stored struct {
	Capture string
	// Commits are the ids of the set's commit records (its captures
	// parts), in order; the last is the live one.
	Commits []string
	// Parts are the ids of each table's part files (committed names).
	Parts map[*Table][]string
	// Temps are the temporary files in the set's directories.
	Temps []string
}

// Live is the id of the set's live commit, "" when it has none.
func (s *Stored) Live() string {
	if len(s.Commits) == 0 {
		return ""
	}
	return s.Commits[len(s.Commits)-1]
}

// PartPath is the path of table t's part id of capture set c in dir.
func PartPath(dir string, t *Table, c, id string) string {
	return filepath.Join(dir, t.Name, "capture="+c, "part-"+id+".parquet")
}

// partID is the id of a part file's name, "" if it is not one.
func partID(name string) string {
	if !strings.HasPrefix(name, "part-") || !strings.HasSuffix(name, ".parquet") {
		return ""
	}
	return strings.TrimSuffix(strings.TrimPrefix(name, "part-"), ".parquet")
}

// isTemp: a writer's temporary file name.
func isTemp(name string) bool {
	return strings.HasPrefix(name, ".part-") && strings.HasSuffix(name, ".parquet.tmp")
}

// ScanCapture reads the directories of capture set c in dir.
func ScanCapture(dir, c string) *Stored {
	s := &Stored{Capture: c, Parts: map[*Table][]string{}}
	for _, t := range Tables {
		pdir := filepath.Join(dir, t.Name, "capture="+c)
		ents, err := os.ReadDir(pdir)
		if err != nil {
			continue
		}
		for _, de := range ents {
			name := de.Name()
			if id := partID(name); id != "" {
				s.Parts[t] = append(s.Parts[t], id)
			} else if isTemp(name) {
				s.Temps = append(s.Temps, filepath.Join(pdir, name))
			}
		}
		slices.Sort(s.Parts[t])
	}
	s.Commits = s.Parts[Captures]
	return s
}

// Selector says which capture sets to read: names and path.Match
// patterns separated by commas ("" selects every set).
type Selector string

func (sel Selector) list() []string {
	var out []string
	for _, p := range strings.Split(string(sel), ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// Check reports a pattern that is not valid.
func (sel Selector) Check() error {
	for _, p := range sel.list() {
		if _, err := path.Match(p, ""); err != nil {
			return fmt.Errorf("--captures %q: %w", p, err)
		}
	}
	return nil
}

// Captures are the names of the capture sets in dir that sel selects,
// sorted. Names without a pattern are not looked up in the table
// directories: a one-set query reads one set's directories only.
func (sel Selector) Captures(dir string) []string {
	pats := sel.list()
	exact := len(pats) > 0
	for _, p := range pats {
		if strings.ContainsAny(p, `*?[\`) {
			exact = false
		}
	}
	if exact {
		slices.Sort(pats)
		return slices.Compact(pats)
	}
	seen := map[string]bool{}
	for _, t := range Tables {
		ents, _ := os.ReadDir(filepath.Join(dir, t.Name))
		for _, de := range ents {
			c, ok := strings.CutPrefix(de.Name(), "capture=")
			if !ok || !de.IsDir() || seen[c] {
				continue
			}
			if len(pats) == 0 || slices.ContainsFunc(pats, func(p string) bool { m, _ := path.Match(p, c); return m }) {
				seen[c] = true
			}
		}
	}
	out := make([]string, 0, len(seen))
	for c := range seen {
		out = append(out, c)
	}
	slices.Sort(out)
	return out
}

// LiveParts are the live part files of each table, of the capture sets
// sel selects, skipping the unreadable ones: each of those is described
// in skipped (its path and why).
func LiveParts(dir string, sel Selector) (parts map[*Table][]string, skipped []string) {
	parts = map[*Table][]string{}
	for _, c := range sel.Captures(dir) {
		s := ScanCapture(dir, c)
		live := s.Live()
		if live == "" {
			continue
		}
		for _, t := range Tables {
			if !slices.Contains(s.Parts[t], live) {
				continue
			}
			p := PartPath(dir, t, c, live)
			if err := CheckPart(p); err != nil {
				skipped = append(skipped, fmt.Sprintf("%s: %v", p, err))
				continue
			}
			parts[t] = append(parts[t], p)
		}
	}
	for _, q := range quarantined(dir, sel) {
		skipped = append(skipped, q+": quarantined (iwsql check --repair); export the capture set again to restore its rows")
	}
	return parts, skipped
}

// quarantineDir holds the parts iwsql check --repair set aside, in the
// export's layout; no reader's glob reaches it.
const quarantineDir = ".quarantine"

func quarantined(dir string, sel Selector) []string {
	var out []string
	for _, t := range Tables {
		ents, _ := os.ReadDir(filepath.Join(dir, quarantineDir, t.Name))
		for _, de := range ents {
			c, ok := strings.CutPrefix(de.Name(), "capture=")
			if !ok || !slices.ContainsFunc(sel.list(), func(p string) bool { m, _ := path.Match(p, c); return m }) && len(sel.list()) > 0 {
				continue
			}
			files, _ := os.ReadDir(filepath.Join(dir, quarantineDir, t.Name, de.Name()))
			for _, f := range files {
				out = append(out, filepath.Join(dir, quarantineDir, t.Name, de.Name(), f.Name()))
			}
		}
	}
	return out
}

// ErrUnreadable is the error of a part file that is not a whole Parquet
// file (a truncated copy, a disk error).
var ErrUnreadable = errors.New("not a whole Parquet file")

// CheckPart reads a part's first and last octets: "PAR1", and at the end
// a footer length that fits, then "PAR1" (Parquet's file layout). A part
// cut short anywhere fails it.
func CheckPart(p string) error {
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	n := st.Size()
	if n < 12 {
		return fmt.Errorf("%w: %d octets (truncated)", ErrUnreadable, n)
	}
	var head [4]byte
	var tail [8]byte
	if _, err := f.ReadAt(head[:], 0); err != nil {
		return err
	}
	if _, err := f.ReadAt(tail[:], n-8); err != nil && err != io.EOF {
		return err
	}
	if string(head[:]) != magic || string(tail[4:]) != magic {
		return fmt.Errorf("%w: no %q at its start or end (truncated)", ErrUnreadable, magic)
	}
	if fl := int64(binary.LittleEndian.Uint32(tail[:4])); fl+12 > n {
		return fmt.Errorf("%w: footer of %d octets in a file of %d (truncated)", ErrUnreadable, fl, n)
	}
	return nil
}

// Garbage is what a capture set's directories hold besides its live
// copy, as of now.
type Garbage struct {
	Older      []string // parts of older commits (records included)
	Unfinished []string // parts of a commit with no record, older than orphanGrace
	Orphans    []string // temporary files of writers that are gone
}

// garbage sorts s's files (see Garbage).
func (s *Stored) garbage(dir string, now time.Time) Garbage {
	var g Garbage
	live := s.Live()
	old := func(p string) bool {
		st, err := os.Stat(p)
		return err == nil && now.Sub(st.ModTime()) >= orphanGrace
	}
	for _, t := range Tables {
		for _, id := range s.Parts[t] {
			p := PartPath(dir, t, s.Capture, id)
			switch {
			case id < live:
				g.Older = append(g.Older, p)
			case id > live && !slices.Contains(s.Commits, id) && old(p):
				g.Unfinished = append(g.Unfinished, p)
			}
		}
	}
	for _, p := range s.Temps {
		if old(p) && !tempLocked(p) {
			g.Orphans = append(g.Orphans, p)
		}
	}
	return g
}

// Collect removes the garbage of capture set c in dir: what a later
// export of the set does after its commit, and iwsql check --repair for
// every set. It returns the files removed.
func Collect(dir, c string) []string {
	g := ScanCapture(dir, c).garbage(dir, time.Now())
	var gone []string
	// Data parts before the records: a record never outlives its data.
	for _, l := range [][]string{g.Orphans, g.Unfinished, g.Older} {
		slices.SortFunc(l, func(a, b string) int {
			return boolCmp(strings.Contains(a, "/captures/"), strings.Contains(b, "/captures/"))
		})
		for _, p := range l {
			if os.Remove(p) == nil {
				gone = append(gone, p)
			}
		}
	}
	return gone
}

func boolCmp(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}

// Problem is something iwsql check found in an export directory.
type Problem struct {
	Kind    string // "duplicate", "unfinished", "orphan", "unreadable"
	Capture string
	Path    string
	Detail  string
	Fixed   string // with repair: "removed", "quarantined", or "" (not fixed)
}

// CheckDir lists the problems of every capture set in dir: duplicate
// (a part of a commit older than the live one: a retried or merged
// export), unfinished (a part of a commit with no record, older than
// orphanGrace: a writer died between its renames), orphan (a temporary
// file whose writer is gone) and unreadable (a live part that is not a
// whole Parquet file). With repair, duplicates, unfinished parts and
// orphans are removed, and an unreadable part is moved to
// DIR/.quarantine/<table>/capture=NAME/ (all the parts of its commit when
// it is the commit record), where no query reaches it.
func CheckDir(dir string, repair bool) []Problem {
	var out []Problem
	now := time.Now()
	for _, c := range Selector("").Captures(dir) {
		s := ScanCapture(dir, c)
		live := s.Live()
		for _, t := range Tables {
			if live == "" || !slices.Contains(s.Parts[t], live) {
				continue
			}
			p := PartPath(dir, t, c, live)
			err := CheckPart(p)
			if err == nil {
				continue
			}
			pr := Problem{Kind: "unreadable", Capture: c, Path: p, Detail: err.Error()}
			if repair {
				move := []*Table{t}
				if t == Captures {
					move = Tables
				}
				for _, m := range move {
					if quarantine(dir, m, c, live) == nil && m == t {
						pr.Fixed = "quarantined"
					}
				}
			}
			out = append(out, pr)
		}
		if repair {
			s = ScanCapture(dir, c)
		}
		g := s.garbage(dir, now)
		for _, l := range []struct {
			kind, detail string
			paths        []string
		}{{"duplicate", "older than the live commit " + s.Live(), g.Older}, {"unfinished", "a commit with no record", g.Unfinished}, {"orphan", "its writer is gone", g.Orphans}} {
			for _, p := range l.paths {
				out = append(out, Problem{Kind: l.kind, Capture: c, Path: p, Detail: l.detail})
			}
		}
		if repair {
			gone := Collect(dir, c)
			for i := range out {
				if out[i].Capture == c && slices.Contains(gone, out[i].Path) {
					out[i].Fixed = "removed"
				}
			}
		}
	}
	return out
}

// quarantine moves table t's part id of set c under DIR/.quarantine.
func quarantine(dir string, t *Table, c, id string) error {
	to := filepath.Join(dir, quarantineDir, t.Name, "capture="+c)
	if err := os.MkdirAll(to, 0o755); err != nil {
		return err
	}
	return os.Rename(PartPath(dir, t, c, id), filepath.Join(to, "part-"+id+".parquet"))
}
