// Package exitcode is the one table of exit statuses every iwkit command
// uses (docs/exit-status.md): a script reads the same number the same way
// whichever command it ran.
package exitcode

const (
	// OK: the command did what was asked (the input was read to its end).
	OK = 0
	// Failure: it could not: an I/O error, an unreadable or damaged
	// capture, a capture that could not start, a check that failed (a
	// replay that differs, a conformance case, a stress error).
	Failure = 1
	// Usage: a bad flag, argument, filter or combination of them; nothing
	// was read. --help is not a mistake: it exits OK.
	Usage = 2
	// NotATerminal: iwtui's standard output is not a terminal.
	NotATerminal = 3
	// Findings: iwdump --fail-on SEVERITY, and a finding of that severity
	// or worse was raised.
	Findings = 4
	// DecoderPanic: iwdump (and its export): a decoder panicked on the
	// input; each panic was contained as an internal.decoder_panic
	// finding and the rest of the capture analysed, but the output is
	// incomplete. Outranks Findings.
	DecoderPanic = 5
)
