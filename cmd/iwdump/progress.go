package main

import (
	"io"
	"os"

	"github.com/schollz/progressbar/v3"
)

// progress draws a bar on stderr while a large file is read from a
// terminal session; piped or small runs get none.
type progress struct {
	bar *progressbar.ProgressBar
	acc int
}

// Files smaller than this finish before a bar is worth drawing.
const progressMin = 64 << 20

func newProgress(stderr io.Writer, mode string, total int64) *progress {
	show := mode == "always"
	if mode == "auto" && total >= progressMin {
		if f, ok := stderr.(*os.File); ok {
			if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
				show = true
			}
		}
	}
	if !show || total <= 0 {
		return &progress{}
	}
	return &progress{bar: progressbar.NewOptions64(total,
		progressbar.OptionSetWriter(stderr),
		progressbar.OptionShowBytes(true),
		progressbar.OptionSetDescription("reading"),
		progressbar.OptionThrottle(200e6),
		progressbar.OptionClearOnFinish())}
}

// add counts octets read (frame and record header); the bar is updated in
// chunks so the hot loop stays cheap.
func (p *progress) add(n int) {
	if p.bar == nil {
		return
	}
	p.acc += n
	if p.acc >= 1<<20 {
		p.bar.Add(p.acc)
		p.acc = 0
	}
}

func (p *progress) finish() {
	if p.bar != nil {
		p.bar.Add(p.acc)
		p.bar.Finish()
	}
}
