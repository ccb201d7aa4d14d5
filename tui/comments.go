package tui

import (
	"fmt"

	"github.com/iwkit/iwkit/pcap"
)

// Packet comments: a pcapng capture's opt_comment options (pcap reads them
// into Frame.Comments) are kept by the store, frame by frame (few frames
// carry one: a map, not a column of every frame); the list marks a row
// whose frames have one, the tree shows them, and w writes them back.
// "Save with findings as comments" (E) writes pcapng where every frame
// that raised a finding carries one comment per finding, for Wireshark
// users to see iwkit's findings on their frames (frame.comment).

// commentMark is what the list's number column shows before a row whose
// frames carry a packet comment (as * before a marked row).
const commentMark = "¶"

// addComments keeps frame n's packet comments (the caller holds s.mu).
func (s *store) addComments(n int, c []string) {
	if len(c) == 0 {
		return
	}
	if s.comments == nil {
		s.comments = map[int][]string{}
	}
	s.comments[n] = c
}

// commentsOf returns frame n's packet comments (nil: none).
func (s *store) commentsOf(n int) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.comments[n]
}

// hasComments reports whether a frame of first..last carries a comment.
func (s *store) hasComments(first, last uint32) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.comments) == 0 {
		return false
	}
	for f := first; f <= last && f > 0; f++ {
		if _, ok := s.comments[int(f)]; ok {
			return true
		}
	}
	return false
}

// Commented reports whether row r's frames carry a packet comment.
func (ix *Index) Commented(r *Row) bool { return ix.store.hasComments(r.First, r.Last) }

// commentLines are the tree lines of the packet comments of frames
// first..last, each linked to its frame.
func (ix *Index) commentLines(first, last int) []Line {
	var out []Line
	for f := max(first, 1); f <= last; f++ {
		for _, c := range ix.store.commentsOf(f) {
			out = append(out, note(0, 0, "comment (frame %d): %s", f, c))
		}
	}
	return out
}

// FindingComments are the packet comments "save with findings as
// comments" gives each frame: one per finding it raised, "iwkit: error
// ddp.msn_gap: message" (severity, code, message), after the frame's own
// comments. Findings raised at no frame (the end of the capture) go on
// frame last.
func (ix *Index) FindingComments(last int) map[int][]string {
	out := map[int][]string{}
	for _, f := range ix.Findings() {
		n := f.Frame
		if n < 1 {
			n = last
		}
		out[n] = append(out[n], fmt.Sprintf("iwkit: %s %s: %s", f.Severity, f.Code, f.Message))
	}
	return out
}

// WriteFindings writes every frame of the capture to path as pcapng
// (whatever its name), each frame with its own comments and one comment
// per finding it raised. It returns the frames written and the frames
// that got finding comments.
func WriteFindings(ix *Index, path string) (frames, commented int, err error) {
	last := ix.store.frames()
	fc := ix.FindingComments(last)
	extra := func(n int) []string { return fc[n] }
	frames, err = writeFramesAs(ix, path, pcap.FormatPcapNG, 1, last, func(int, *pcap.Packet, bool) bool { return true }, extra)
	if err != nil {
		return frames, 0, err
	}
	return frames, len(fc), nil
}

// frameComments is what writeKept writes as frame n's comments: its own,
// then extra's (nil: none).
func (ix *Index) frameComments(n int, extra func(int) []string) []string {
	c := ix.store.commentsOf(n)
	if extra == nil {
		return c
	}
	if e := extra(n); len(e) > 0 {
		return append(append([]string(nil), c...), e...)
	}
	return c
}
