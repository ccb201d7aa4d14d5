package track

import (
	"fmt"
	"time"

	"github.com/iwkit/iwkit/finding"
)

// Dir is a direction of an iWARP connection, named after the MPA roles
// (RFC 5044 §7.1: the Initiator sends the MPA Request, whoever sent the
// SYN).
type Dir uint8

const (
	// I2R is from the MPA Initiator to the Responder.
	I2R Dir = 0
	// R2I is from the Responder to the Initiator.
	R2I Dir = 1
	// NoDir marks a finding about the connection as a whole.
	NoDir Dir = 2
)

func (d Dir) String() string {
	switch d {
	case I2R:
		return "i2r"
	case R2I:
		return "r2i"
	}
	return "-"
}

// MarshalText makes a Dir print as its name in JSON.
func (d Dir) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// Other is the opposite direction.
func (d Dir) Other() Dir { return d ^ 1 }

// Sender names the side that sends in direction d.
func (d Dir) Sender() string {
	if d == I2R {
		return "initiator"
	}
	return "responder"
}

// Finding is one expert-info item: a protocol violation, the peer's
// verdict, or context the reader needs.
type Finding struct {
	Severity finding.Severity
	Code     finding.Code
	// Checks names the receiver-checks.md rows behind the code.
	Checks  string
	Message string
	Conn    int
	// Dir is the direction whose sender the finding is about (NoDir for
	// the connection as a whole).
	Dir Dir
	// Frames lists the frames involved; the first is the one that raised
	// the finding (for example the Read Response), the others are context
	// (the Read Request it was matched against).
	Frames []int
	Time   time.Time
}

func (f *Finding) String() string {
	return fmt.Sprintf("%s %s conn %d %s frames %v: %s", f.Severity, f.Code, f.Conn, f.Dir, f.Frames, f.Message)
}

// finding raises code on c. other, when non-zero, is a second frame
// involved. Findings of a code beyond Limits.FindingsPerCode on one
// connection are counted, not raised.
func (c *conn) finding(code finding.Code, dir Dir, at *At, other int, format string, args ...any) {
	t := c.t
	sev := code.Severity()
	if dir < NoDir && code.Fatal() {
		d := &c.d[dir]
		if !d.afterError {
			d.afterError, d.errorFrame = true, at.Frame
		}
	}
	if c.segActive && c.segFlag == 0 && sev == finding.Error {
		c.segFlag = code
	}
	c.codeCount[code]++
	if int(c.codeCount[code]) > t.lim.FindingsPerCode {
		t.suppressed++
		c.st.FindingsSuppressed++
		if c.codeCount[code] == uint32(t.lim.FindingsPerCode)+1 {
			t.raise(c, finding.TrackFindingsSuppressed, dir, at, 0, fmt.Sprintf("more than %d %s findings on this connection: the rest are only counted", t.lim.FindingsPerCode, code))
		}
		return
	}
	t.raise(c, code, dir, at, other, fmt.Sprintf(format, args...))
}

func (t *Tracker) raise(c *conn, code finding.Code, dir Dir, at *At, other int, msg string) {
	frames := make([]int, 1, 2)
	frames[0] = at.Frame
	if other != 0 && other != at.Frame {
		frames = append(frames, other)
	}
	f := Finding{
		Severity: code.Severity(),
		Code:     code,
		Checks:   code.ChecksText(),
		Message:  msg,
		Conn:     at.Conn,
		Dir:      dir,
		Frames:   frames,
		Time:     at.Time,
	}
	t.byCode[code]++
	t.bySeverity[f.Severity]++
	if c != nil {
		c.st.Findings[code]++
	}
	if t.cfg.OnFinding != nil {
		t.cfg.OnFinding(&f)
		return
	}
	if len(t.findings) < t.lim.StoredFindings {
		t.findings = append(t.findings, f)
	} else {
		t.findingsDropped++
	}
}

// once reports whether code has not yet been raised for dir on c, and
// records that it now has. Stream properties (a DV, reserved bits) are
// reported once per direction, not on every segment.
func (c *conn) once(dir Dir, code finding.Code) bool {
	i := int(dir)
	if i > 2 {
		i = 2
	}
	w, b := code/64, code%64
	if c.onceBits[i][w]&(1<<b) != 0 {
		return false
	}
	c.onceBits[i][w] |= 1 << b
	return true
}
