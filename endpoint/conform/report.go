package conform

import (
	"encoding/xml"
	"fmt"
	"io"
	"strings"
)

// Summary counts a run's rows by verdict (iwconform --json's last line).
type Summary struct {
	Cases   int     `json:"cases"`
	Pass    int     `json:"pass"`
	Fail    int     `json:"fail"`
	Skip    int     `json:"skip"`
	Error   int     `json:"error"`
	NotRun  int     `json:"not_run"`
	Seconds float64 `json:"seconds"`
}

// Summarize counts rows by verdict.
func Summarize(rows []Row) Summary {
	s := Summary{Cases: len(rows)}
	for _, r := range rows {
		s.Seconds += r.Seconds
		switch r.Verdict {
		case Pass:
			s.Pass++
		case Fail:
			s.Fail++
		case Skip:
			s.Skip++
		case Error:
			s.Error++
		case NotRun:
			s.NotRun++
		}
	}
	return s
}

func (s Summary) String() string {
	return fmt.Sprintf("%d cases: %d pass, %d fail, %d skip, %d error, %d not run in %.3f s", s.Cases, s.Pass, s.Fail, s.Skip, s.Error, s.NotRun, s.Seconds)
}

// The JUnit XML that CI servers read (Jenkins, GitLab, GitHub Actions'
// reporters): <testsuites> holding one <testsuite> of <testcase>s, each
// with at most one <failure>, <error> or <skipped>; counts and times
// (seconds) on both levels. A not-run case is skipped, with the cause.
type junitSuites struct {
	XMLName xml.Name `xml:"testsuites"`
	Name    string   `xml:"name,attr"`
	junitCounts
	Suites []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name string `xml:"name,attr"`
	junitCounts
	Cases []junitCase `xml:"testcase"`
}

// junitCounts are the attributes both levels carry.
type junitCounts struct {
	Tests    int     `xml:"tests,attr"`
	Failures int     `xml:"failures,attr"`
	Errors   int     `xml:"errors,attr"`
	Skipped  int     `xml:"skipped,attr"`
	Time     float64 `xml:"time,attr"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      float64       `xml:"time,attr"`
	Failure   *junitProblem `xml:"failure"`
	Error     *junitProblem `xml:"error"`
	Skipped   *junitProblem `xml:"skipped"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitProblem struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr,omitempty"`
	Text    string `xml:",chardata"`
}

// WriteJUnit writes rows as JUnit XML: one test suite named suite (the
// target), one test case per row (named ID, or ID#RUN with Repeat), its
// class the RFC clause. A fail is a <failure> (expected, got), an error
// an <error>, a skip or a not-run case <skipped>; the evidence (pcap,
// Terminate octets) goes to <system-out>.
func WriteJUnit(w io.Writer, suite string, rows []Row) error {
	s := Summarize(rows)
	js := junitSuite{Name: suite, junitCounts: junitCounts{Tests: s.Cases, Failures: s.Fail, Errors: s.Error, Skipped: s.Skip + s.NotRun, Time: s.Seconds}}
	for _, r := range rows {
		name := r.ID
		if r.Run > 0 {
			name = fmt.Sprintf("%s#%d", r.ID, r.Run)
		}
		c := junitCase{Name: name, Classname: "iwconform." + r.ID, Time: r.Seconds}
		detail := fmt.Sprintf("%s (%s)\nsent: %s\nexpected: %s\ngot: %s", r.ID, r.Clause, r.Sent, r.Expected, r.Got)
		msg := r.Reason
		switch r.Verdict {
		case Fail:
			if msg == "" {
				msg = "expected " + r.Expected + ", got " + r.Got
			}
			c.Failure = &junitProblem{Message: msg, Type: Fail, Text: detail}
		case Error:
			c.Error = &junitProblem{Message: msg, Type: Error, Text: detail}
		case Skip, NotRun:
			c.Skipped = &junitProblem{Message: strings.TrimSpace(r.Verdict + ": " + msg)}
		}
		var out []string
		if r.Pcap != "" {
			out = append(out, "pcap: "+r.Pcap)
		}
		if r.Terminate != "" {
			out = append(out, "terminate: "+r.Terminate)
		}
		c.SystemOut = strings.Join(out, "\n")
		js.Cases = append(js.Cases, c)
	}
	doc := junitSuites{Name: "iwconform", junitCounts: js.junitCounts, Suites: []junitSuite{js}}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}
