// Package finding is the catalogue of every finding code iwkit raises: the
// capture, TCP reassembly and MPA framing codes, the per-connection RDMA
// checks of track/, and (later) the ULP codes. Each code is declared once,
// in codes.go, with its stable name, severity, the stage that raises it,
// the receiver-check rows it implements and a one-line summary. The
// reassembler, the tracker, the generator's ground truth and the commands
// all use these codes; iwdump's `-z findings` table and the list in docs/findings.md
// come from here.
//
// The package imports nothing of ours.
package finding

import (
	"fmt"
	"strings"
)

// Severity ranks a finding, as Wireshark's expert info does.
type Severity uint8

const (
	// Note is context: an era, an extension in use, an uncertainty.
	Note Severity = iota
	// Warning is a rule broken that receivers ignore or need not check,
	// or a violation inferred with less than full certainty.
	Warning
	// Error is a protocol violation a conforming receiver would act on,
	// or the peer's own verdict (a Terminate).
	Error
)

var severityNames = [...]string{Note: "note", Warning: "warning", Error: "error"}

func (s Severity) String() string {
	if int(s) < len(severityNames) {
		return severityNames[s]
	}
	return fmt.Sprintf("severity(%d)", uint8(s))
}

// MarshalText makes a Severity print as its name in JSON.
func (s Severity) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText reads a Severity's name.
func (s *Severity) UnmarshalText(b []byte) error {
	v, ok := ParseSeverity(string(b))
	if !ok {
		return fmt.Errorf("finding: unknown severity %q", b)
	}
	*s = v
	return nil
}

// ParseSeverity looks a severity up by its name ("note", "warning",
// "error").
func ParseSeverity(name string) (Severity, bool) {
	for i, n := range severityNames {
		if n == name {
			return Severity(i), true
		}
	}
	return 0, false
}

// Rank orders "no finding" below every severity, in one octet: the worst
// of several findings is the largest rank, and a PDU no finding names has
// RankNone (the TUI's rows keep it this way).
type Rank uint8

// RankNone is the rank of no finding.
const RankNone Rank = 0

// Rank is s's rank: RankNone < Note < Warning < Error.
func (s Severity) Rank() Rank { return Rank(s) + 1 }

// Severity is the severity of rank r; false for RankNone.
func (r Rank) Severity() (Severity, bool) {
	if r == RankNone {
		return 0, false
	}
	return Severity(r - 1), true
}

// Stage is the pipeline stage that raises a code.
type Stage uint8

const (
	// StageCapture: frame decoding (pcap), before any stream exists.
	StageCapture Stage = iota + 1
	// StageReassembly: TCP streams and the MPA framer (reassembly/).
	StageReassembly
	// StageTrack: per-connection MPA, DDP and RDMAP semantics (track/).
	StageTrack
	// StageULP: the storage protocols above RDMAP (ulp/).
	StageULP
	// StagePipeline: the pipeline that wires the stages (analyze/), such
	// as a contained decoder panic.
	StagePipeline
)

func (s Stage) String() string {
	switch s {
	case StageCapture:
		return "capture"
	case StageReassembly:
		return "reassembly"
	case StageTrack:
		return "track"
	case StageULP:
		return "ulp"
	case StagePipeline:
		return "pipeline"
	}
	return fmt.Sprintf("stage(%d)", uint8(s))
}

// Info describes a code.
type Info struct {
	Code     Code
	Name     string   // stable name, "layer.what", e.g. "ddp.msn_gap"
	Severity Severity // severity of every finding with this code
	Stage    Stage    // the stage that raises it
	// Checks are the ids of the receiver-check rows it implements
	// ("DDP-05"; shared with the catalogue: do not modify); Ref is a
	// reference where no row applies or a note on the rows ("RFC 5044
	// §7.1", "analyzer", "reference §5.1").
	Checks  []string
	Ref     string
	Summary string // one line
	// Fatal marks errors a conforming receiver detects on the segment
	// itself: later segments in that direction are "after error" (DDP-16,
	// RFC 5044 §8).
	Fatal bool
}

// Layer is the name's prefix: the protocol layer the code judges ("tcp",
// "mpa", "ddp", "rdmap", ...; "track" for the analyzer's own state,
// "frame" for the capture).
func (i *Info) Layer() string {
	l, _, _ := strings.Cut(i.Name, ".")
	return l
}

// ChecksText is Checks and Ref as one string: "RD-20, RD-21",
// "RD-20 (reference §5.1)", or Ref alone.
func (i *Info) ChecksText() string {
	s := strings.Join(i.Checks, ", ")
	switch {
	case s == "":
		return i.Ref
	case i.Ref != "":
		return s + " (" + i.Ref + ")"
	}
	return s
}

func init() {
	for c := Code(1); c < numCodes; c++ {
		infos[c].Code = c
		byName[infos[c].Name] = c
		checksText[c] = infos[c].ChecksText()
	}
}

var (
	byName     = make(map[string]Code, numCodes)
	checksText [numCodes]string
)

// Valid reports whether c is a declared code.
func (c Code) Valid() bool { return c > none && c < numCodes }

// String returns the stable name, e.g. "ddp.msn_gap".
func (c Code) String() string {
	if !c.Valid() {
		return fmt.Sprintf("finding(%d)", uint16(c))
	}
	return infos[c].Name
}

// MarshalText makes a Code print as its name in JSON.
func (c Code) MarshalText() ([]byte, error) { return []byte(c.String()), nil }

// UnmarshalText reads a Code's name.
func (c *Code) UnmarshalText(b []byte) error {
	v, ok := Lookup(string(b))
	if !ok {
		return fmt.Errorf("finding: unknown code %q", b)
	}
	*c = v
	return nil
}

// Info returns the description of c (the zero Info if c is not declared).
func (c Code) Info() Info {
	if !c.Valid() {
		return Info{}
	}
	return infos[c]
}

// Severity is the severity every finding with code c carries.
func (c Code) Severity() Severity {
	if !c.Valid() {
		return Note
	}
	return infos[c].Severity
}

// ChecksText is Info().ChecksText() without allocating.
func (c Code) ChecksText() string {
	if !c.Valid() {
		return ""
	}
	return checksText[c]
}

// Fatal reports whether c is an error after which a receiver treats the
// direction's later segments as "after error" (see Info.Fatal).
func (c Code) Fatal() bool { return c.Valid() && infos[c].Fatal }

// Lookup finds a code by its name.
func Lookup(name string) (Code, bool) {
	c, ok := byName[name]
	return c, ok
}

// All lists every code in declaration order (grouped by layer).
func All() []Info {
	out := make([]Info, 0, numCodes-1)
	for c := Code(1); c < numCodes; c++ {
		out = append(out, infos[c])
	}
	return out
}
