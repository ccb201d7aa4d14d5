// Package version says which build of iwkit is running: the module version
// and the VCS revision the Go toolchain stamps into every binary (what
// `go version -m BINARY` shows), for --version and for the version that
// exports and JSON headers record.
package version

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
)

// Info is what the build information says of this binary.
type Info struct {
	Module   string // the main module's path
	Version  string // its version: a tag, a pseudo-version, or "(devel)"
	Revision string // vcs.revision, or "" when built outside a checkout
	Time     string // vcs.time (RFC 3339)
	Modified bool   // vcs.modified: the work tree had changes
	Go       string // the toolchain that built it
}

// Read reads the running binary's build information.
func Read() Info {
	in := Info{Version: "(devel)", Go: runtime.Version()}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return in
	}
	in.Module = bi.Main.Path
	if bi.Main.Version != "" {
		in.Version = bi.Main.Version
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			in.Revision = s.Value
		case "vcs.time":
			in.Time = s.Value
		case "vcs.modified":
			in.Modified = s.Value == "true"
		}
	}
	return in
}

// Build is the short build note: the revision's first 12 digits, with
// "+dirty" when the tree was modified; "" when there is no revision.
func (in Info) Build() string {
	if in.Revision == "" {
		return ""
	}
	r := in.Revision
	if len(r) > 12 {
		r = r[:12]
	}
	if in.Modified {
		r += "+dirty"
	}
	return r
}

// Line is what --version prints for the command cmd, one line as
// `tshark -v` starts: "iwdump (iwkit) VERSION, revision R of TIME, go1.x".
func (in Info) Line(cmd string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s (iwkit) %s", cmd, in.Version)
	if bd := in.Build(); bd != "" {
		fmt.Fprintf(&b, ", revision %s", bd)
		if in.Time != "" {
			fmt.Fprintf(&b, " of %s", in.Time)
		}
	}
	fmt.Fprintf(&b, ", %s %s/%s", in.Go, runtime.GOOS, runtime.GOARCH)
	return b.String()
}

// String is the version as exports and JSON headers record it:
// "VERSION" or "VERSION (REVISION)".
func (in Info) String() string {
	if bd := in.Build(); bd != "" {
		return in.Version + " (" + bd + ")"
	}
	return in.Version
}
