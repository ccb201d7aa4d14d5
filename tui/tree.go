package tui

// The detail tree as a tree: render's nodes, a line per protocol (MPA,
// DDP, RDMAP, FPDU framing, the storage protocols) over its fields, each
// field under the field its dotted name extends; any line with deeper
// lines after it folds. Folds are kept by name, so a protocol folded stays folded from
// one PDU to the next, as in termshark.

// Key names a line for folding: the field name, or the line's text.
func (ln *Line) Key() string {
	if ln.IsField() {
		return ln.Name
	}
	return ln.Text
}

// Fold is the set of lines folded, by key.
type Fold map[string]bool

// HasChildren reports whether line i has deeper lines under it.
func (d *Detail) HasChildren(i int) bool {
	return i >= 0 && i+1 < len(d.Lines) && d.Lines[i+1].Depth > d.Lines[i].Depth
}

// Parent returns the line line i is under, -1 for a top line.
func (d *Detail) Parent(i int) int {
	for j := i - 1; j >= 0; j-- {
		if d.Lines[j].Depth < d.Lines[i].Depth {
			return j
		}
	}
	return -1
}

// Visible returns the lines shown with fold: those under no folded line.
func (d *Detail) Visible(fold Fold) []int {
	var out []int
	hide := -1 // hide lines deeper than this depth
	for i := range d.Lines {
		ln := &d.Lines[i]
		if hide >= 0 {
			if ln.Depth > hide {
				continue
			}
			hide = -1
		}
		out = append(out, i)
		if fold[ln.Key()] && d.HasChildren(i) {
			hide = ln.Depth
		}
	}
	return out
}

// Unfold unfolds the lines above line i, so that it shows.
func (d *Detail) Unfold(fold Fold, i int) {
	for p := d.Parent(i); p >= 0; p = d.Parent(p) {
		delete(fold, d.Lines[p].Key())
	}
}
