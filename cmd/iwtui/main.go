// Command iwtui is the terminal inspector of iWARP captures: the PDU list,
// the field tree and the octets of a capture file or a live interface,
// with findings, RDMA operations, connections, STags and an I/O graph a
// key away. See docs/iwtui.md for keys, flags and exit
// codes.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/iwkit/iwkit/analyze"
	"github.com/iwkit/iwkit/capture"
	"github.com/iwkit/iwkit/internal/exitcode"
	"github.com/iwkit/iwkit/tui"
	"golang.org/x/term"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

// parse reads the flags: the capture input ones are package capture's, as
// in iwdump, so the same arguments mean the same and fail the same way.
// FILE may also come first after the flags (iwtui FILE [capture filter]).
// done says the command is over, with exit status code.
// settings are the settings file's, with -t and --theme applied; timeFlag
// is -t (it wins over what a screen saved, for this run).
var (
	settings tui.Settings
	timeFlag string
)

func parse(args []string, stdout, stderr io.Writer) (cfg tui.Config, display string, code int, done bool) {
	fs := flag.NewFlagSet("iwtui", flag.ContinueOnError)
	var in capture.Options
	in.Register(fs, capture.All)
	fs.StringVar(&display, "Y", "", "start with the display `filter` applied (iwdump -Y language)")
	theme := fs.String("theme", "", "colour `theme`: "+tui.ThemeNames()+" (default dark, or the settings file's; none when NO_COLOR is set); L cycles them, Z turns the list's colouring rules off")
	tfmt := fs.String("t", "", "time `format` of the list: r (seconds since the first frame), a (time of day, UTC), ad (date and time, UTC), e (seconds since the epoch), as iwdump -t (default r, or the settings file's)")
	doc.Setup(fs, stderr) // -h, --help, --version (doc.go)
	if code, done := doc.Done(fs, fs.Parse(args), stdout); done {
		return cfg, "", code, true
	}
	rest := fs.Args()
	if len(in.Files) == 0 && in.Iface == "" && len(rest) > 0 && !in.List && !in.PrintProg && !in.PrintDDD {
		in.Files, rest = rest[:1], rest[1:]
	}
	fail := func(err error) (tui.Config, string, int, bool) {
		fmt.Fprintf(stderr, "iwtui: %s\n", capture.Message("iwtui", err))
		if capture.IsUsage(err) {
			return cfg, "", exitcode.Usage, true
		}
		return cfg, "", exitcode.Failure, true
	}
	if done, err := in.Finish(rest, stdout); err != nil {
		return fail(err)
	} else if done {
		return cfg, "", exitcode.OK, true
	}
	st, err := tui.LoadSettings() // $XDG_CONFIG_HOME/iwkit/iwtui.json
	if err != nil {
		return fail(err)
	}
	if *theme != "" {
		st.Theme = *theme
	}
	if err := tui.SetTheme(st.Theme); err != nil {
		return fail(&capture.UsageError{Msg: "--theme: " + err.Error()})
	}
	if timeFlag = *tfmt; timeFlag != "" {
		st.TimeFormat = timeFlag
	}
	if err := st.Check(); err != nil {
		return fail(&capture.UsageError{Msg: "-t: " + err.Error()})
	}
	settings = st
	if display != "" {
		if _, err := analyze.CompileFilter(display); err != nil {
			return fail(&capture.UsageError{Msg: "-Y: " + err.Error()})
		}
	}
	cfg = tui.Config{Files: in.Files, Ports: in.Ports, DecodeAs: in.DecodeAs, CaptureFilter: in.FileFilter()}
	if in.Iface != "" {
		lc := in.LiveConfig() // no Warn: warnings on the terminal would tear the screen
		cfg.Live = &lc
	}
	return cfg, display, exitcode.OK, false
}

func run(args []string, stdout *os.File, stderr io.Writer) int {
	cfg, display, code, done := parse(args, stdout, stderr)
	if done {
		return code
	}
	for {
		s, err := tui.Open(cfg)
		if err != nil {
			fmt.Fprintf(stderr, "iwtui: %s\n", capture.Message("iwtui", err))
			return exitcode.Failure
		}
		if !term.IsTerminal(int(stdout.Fd())) {
			s.Close()
			fmt.Fprintln(stderr, "iwtui: standard output is not a terminal; for text output use iwdump (iwdump -r FILE [-V] [-Y FILTER])")
			return exitcode.NotATerminal
		}
		u := tui.New(s)
		if err := u.Use(settings); err != nil {
			fmt.Fprintf(stderr, "iwtui: %v\n", err) // the settings file could not be written: go on without it
		}
		if display != "" {
			u.ApplyFilter(display)
		}
		err = u.Run()
		s.Close()
		if err != nil {
			fmt.Fprintf(stderr, "iwtui: %v\n", err)
			return exitcode.Failure
		}
		if u.LoadNext == "" {
			return exitcode.OK
		}
		// :load: the same flags on another file.
		if fresh, err := tui.LoadSettings(); err == nil { // what the last screen saved
			settings.Filters, settings.Recent, settings.Columns = fresh.Filters, fresh.Recent, fresh.Columns
			if timeFlag == "" {
				settings.TimeFormat = fresh.TimeFormat
			}
		}
		cfg.File, cfg.Files, display = u.LoadNext, nil, ""
	}
}
