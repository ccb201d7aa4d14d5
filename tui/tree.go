package tui

import "strings"

// The detail tree as a tree: a line per protocol (MPA, DDP, RDMAP, FPDU
// framing, the storage protocols) over its fields, each field under the
// field its dotted name extends; any line with deeper lines after it
// folds. Folds are kept by name, so a protocol folded stays folded from
// one PDU to the next, as in termshark.

// sectionTitles name the protocol lines by the fields' first component.
var sectionTitles = map[string]string{
	"mpa": "MPA", "ddp": "DDP", "rdmap": "RDMAP", "ulp": "ULP",
	"nvme": "NVMe-oF", "iser": "iSER", "iscsi": "iSCSI", "scsi": "SCSI",
	"smbd": "SMB Direct", "smb2": "SMB2", "rpcrdma": "RPC-over-RDMA", "rpc": "RPC", "nfs": "NFS",
}

func sectionTitle(prefix string) string {
	if t, ok := sectionTitles[prefix]; ok {
		return t
	}
	return strings.ToUpper(prefix)
}

// appendSectioned appends a field line, after the line of its protocol
// when it is the first of that protocol (*section is the last one).
func appendSectioned(out []Line, section *string, ln Line) []Line {
	name, _, _ := strings.Cut(ln.Text, " = ")
	if sec, _, _ := strings.Cut(name, "."); sec != *section {
		*section = sec
		out = append(out, Line{Text: sectionTitle(sec)})
	}
	return append(out, ln)
}

// spanSections gives each top line that has none the octets of the lines
// under it, so that selecting "DDP" lights up the DDP header.
func spanSections(lines []Line) {
	for i := range lines {
		if lines[i].Depth != 0 || lines[i].Len > 0 {
			continue
		}
		lo, hi := -1, -1
		for j := i + 1; j < len(lines) && lines[j].Depth > 0; j++ {
			if ln := &lines[j]; ln.Len > 0 {
				if lo < 0 || ln.Off < lo {
					lo = ln.Off
				}
				hi = max(hi, ln.Off+ln.Len)
			}
		}
		if lo >= 0 {
			lines[i].Off, lines[i].Len = lo, hi-lo
		}
	}
}

// Key names a line for folding: the field name, or the line's text.
func (ln *Line) Key() string {
	k, _, _ := strings.Cut(ln.Text, " = ")
	return k
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
