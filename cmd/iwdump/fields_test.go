package main

import (
	"bytes"
	"fmt"
	"math/bits"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/iwkit/iwkit/internal/oracle"
)

// fieldsEnums are the fields tshark prints as hex numbers and iwdump as
// names (as numbers with -n, in decimal): compared by number.
var fieldsEnums = map[string]bool{"iwarp_rdma.opcode": true, "iwarp_rdma.term_layer": true, "iwarp_rdma.term_etype": true, "iwarp_rdma.term_errcode": true}

// TestFieldsAgainstTshark: iwdump -T fields against tshark -T fields on
// the committed captures, with the same -E options, for the fields both
// have (diffFields): the same lines (frames), the same quoting, the same
// values; named values compared by number, and tshark's known mistakes
// (CRC octet order, siw's Terminate encoding: iwarp-reference §5)
// accounted for field by field.
func TestFieldsAgainstTshark(t *testing.T) {
	bin := oracle.Tshark(t)
	opts := []string{"-E", "header=y", "-E", "separator=,", "-E", "quote=d", "-E", "occurrence=f"}
	for _, file := range captures(t) {
		t.Run(filepath.Base(file), func(t *testing.T) {
			args := append([]string{"-r", file, "-n", "--disable-protocol", "tibia", "-Y", "iwarp_mpa", "-T", "fields"}, opts...)
			ours := append([]string{"-r", file, "-n", "-T", "fields"}, opts...)
			args = append(args, "-e", "frame.number")
			ours = append(ours, "-e", "frame")
			for _, f := range diffFields {
				args = append(args, "-e", f.ts)
				ours = append(ours, "-e", f.path)
			}
			// Two more columns of ours, for siw-encoded Terminates.
			ours = append(ours, "-e", "rdmap.term.siw_encoding", "-e", "rdmap.term.raw")
			var tout []byte
			var err error
			for try := 0; try < 3; try++ { // tshark sometimes exits 2 under load
				if tout, err = exec.Command(bin, args...).Output(); err == nil {
					break
				}
			}
			if err != nil {
				t.Fatalf("tshark: %v", err)
			}
			var stdout, stderr bytes.Buffer
			if code := run(ours, &stdout, &stderr); code != 0 {
				t.Fatalf("iwdump exit %d: %s", code, stderr.String())
			}
			want := strings.Split(strings.TrimSuffix(string(tout), "\n"), "\n")
			got := strings.Split(strings.TrimSuffix(stdout.String(), "\n"), "\n")
			// The header names the fields as given to -e, unquoted.
			if gh := got[0]; gh != strings.Join(ourNames(), ",")+",rdmap.term.siw_encoding,rdmap.term.raw" {
				t.Errorf("iwdump header %q", gh)
			}
			if !strings.HasPrefix(want[0], "frame.number,iwarp_mpa.rev,") {
				t.Errorf("tshark header %q", want[0])
			}
			rows := map[string]string{}
			for _, line := range got[1:] {
				frame := strings.SplitN(line, ",", 2)[0]
				if _, dup := rows[frame]; dup {
					t.Errorf("frame %s on two lines", frame)
				}
				rows[frame] = line
			}
			compared := 0
			for _, line := range want[1:] {
				tcols := strings.Split(line, ",")
				g, ok := rows[tcols[0]]
				if !ok {
					t.Errorf("tshark line %s: no iwdump line for the frame", line)
					continue
				}
				delete(rows, tcols[0])
				gcols := strings.Split(g, ",")
				if len(gcols) != len(tcols)+2 {
					t.Fatalf("columns: tshark %q, iwdump %q", line, g)
				}
				for i, f := range diffFields {
					tv, gv := tcols[i+1], gcols[i+1]
					if msg := compareFieldsValue(f, tv, gv, tcols, gcols); msg != "" {
						t.Errorf("frame %s %s: %s", tcols[0], f.ts, msg)
					}
					compared++
				}
			}
			// Lines only iwdump prints: frames whose FPDUs tshark does not
			// find (no handshake seen, or an FPDU not first in its
			// segment: iwarp-reference §5.3).
			t.Logf("%d lines compared (%d values), %d lines only iwdump prints", len(want)-1, compared, len(rows))
			if len(want) > 1 && compared == 0 {
				t.Error("nothing compared")
			}
		})
	}
}

func ourNames() []string {
	names := []string{"frame"}
	for _, f := range diffFields {
		names = append(names, f.path)
	}
	return names
}

// compareFieldsValue compares one column: quoting first (a value is
// quoted, an absent field is empty), then the value.
func compareFieldsValue(f tsharkField, tv, gv string, tcols, gcols []string) string {
	n := len(gcols)
	siw, raw := strings.Trim(gcols[n-2], `"`), strings.Trim(gcols[n-1], `"`)
	isCRC := f.ts == "iwarp_mpa.crc" || f.ts == "iwarp_mpa.crc_check"
	if strings.HasPrefix(f.path, "rdmap.term.") && siw == "1" {
		// tshark reads siw's swapped control word the RFC's way
		// (iwarp-reference §5.1): its numbers are the raw word's RFC
		// reading, and it may show other fields for that layer.
		if tv == "" {
			return ""
		}
		rv, _ := number(raw)
		tn, _ := number(strings.Trim(tv, `"`))
		want := map[string]uint64{"iwarp_rdma.term_layer": rv >> 28, "iwarp_rdma.term_etype": rv >> 24 & 0xF,
			"iwarp_rdma.term_errcode": rv >> 16 & 0xFF, "iwarp_rdma.term_hdrct_m": rv >> 15 & 1,
			"iwarp_rdma.hdrct_d": rv >> 14 & 1, "iwarp_rdma.hdrct_r": rv >> 13 & 1}[f.ts]
		if want != tn {
			return fmt.Sprintf("siw raw reading: tshark %s, raw %s gives %d", tv, raw, want)
		}
		return ""
	}
	if isCRC && tv == "" {
		return "" // tshark shows the CRC fields only where it checked them
	}
	if (tv == "") != (gv == "") {
		return fmt.Sprintf("tshark %q, iwdump %q", tv, gv)
	}
	if tv == "" {
		return ""
	}
	unq := func(s string) (string, bool) {
		if len(s) < 2 || s[0] != '"' || s[len(s)-1] != '"' {
			return s, false
		}
		return s[1 : len(s)-1], true
	}
	tu, tok := unq(tv)
	gu, gok := unq(gv)
	if !tok || !gok {
		return fmt.Sprintf("quoting: tshark %s, iwdump %s", tv, gv)
	}
	switch {
	case isCRC:
		// tshark reads the CRC's wire octets in network order; iwkit
		// gives the CRC32c value, sent least significant octet first.
		tn, _ := number(tu)
		gn, _ := number(gu)
		if uint64(bits.ReverseBytes32(uint32(gn))) != tn {
			return fmt.Sprintf("tshark %s, iwdump %s (wire order %#08x)", tv, gv, bits.ReverseBytes32(uint32(gn)))
		}
		return ""
	case fieldsEnums[f.ts], f.ts == "iwarp_rdma.inval_stag":
		// Named values by number; and tshark shows the invalidated STag
		// in decimal (its field is BASE_DEC), where iwdump shows every
		// STag in hex: compared by value (seen on the Send with
		// Invalidate of the testdata/ulp captures).
		tn, ok1 := number(tu)
		gn, ok2 := number(gu)
		if !ok1 || !ok2 || tn != gn {
			return fmt.Sprintf("tshark %s, iwdump %s", tv, gv)
		}
		return ""
	}
	if tu != gu {
		return fmt.Sprintf("tshark %s, iwdump %s", tv, gv)
	}
	return ""
}
