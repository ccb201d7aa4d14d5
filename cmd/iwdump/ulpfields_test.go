package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/iwkit/iwkit/internal/oracle"
)

// The storage protocols' fields in tshark's field output: goldens on the
// real captures of testdata/ulp, the -E options on a repeated field, and a
// differential with tshark where it decodes the same fields.

// ulpFieldSets are the -e lists of the goldens, by the protocol a
// capture's name says.
var ulpFieldSets = map[string][]string{
	"nvmeof": {"frame", "conn", "dir", "nvme.type", "nvme.opcode", "nvme.fctype", "nvme.cid", "nvme.qid", "nvme.sqsize",
		"nvme.nsid", "nvme.slba", "nvme.nlb", "nvme.sgl.type", "nvme.sgl.len", "nvme.sgl.key", "nvme.status", "nvme.sqhd",
		"ulp.command", "ulp.rdma_octets", "ulp.latency_ns"},
	"iser": {"frame", "conn", "dir", "iser.opcode", "iser.read_stag", "iser.write_stag", "iscsi.opcode", "iscsi.itt",
		"iscsi.cmdsn", "iscsi.maxcmdsn", "iscsi.edtl", "iscsi.keys", "scsi.opcode", "scsi.lba", "scsi.blocks", "scsi.status",
		"ulp.command", "ulp.rdma_octets", "ulp.latency_ns"},
	"smb_direct": {"frame", "conn", "dir", "smbd.type", "smbd.credits_requested", "smbd.credits_granted", "smbd.max_receive_size",
		"smbd.remaining", "smbd.data_length", "smb2.command", "smb2.msg_id", "smb2.status", "smb2.length", "smb2.offset",
		"smb2.channel", "smb2.descriptors", "ulp.command", "ulp.rdma_octets", "ulp.latency_ns"},
	"nfs": {"frame", "conn", "dir", "rpcrdma.xid", "rpcrdma.proc", "rpcrdma.credits", "rpcrdma.chunks", "rpc.msg_type",
		"rpc.procedure", "nfs.procedure", "nfs.ops", "nfs.status", "nfs.offset", "nfs.count", "ulp.command", "ulp.rdma_octets",
		"ulp.latency_ns"},
}

func ulpFieldSet(file string) []string {
	for k, v := range ulpFieldSets {
		if strings.Contains(filepath.Base(file), k) {
			return v
		}
	}
	return nil
}

// realULPCaptures are the captures of Linux initiators and targets.
func realULPCaptures(t *testing.T) []string {
	var files []string
	all, _ := filepath.Glob("../../testdata/ulp/*.pcap")
	for _, f := range all {
		if !strings.HasPrefix(filepath.Base(f), "gen_") {
			files = append(files, f)
		}
	}
	if len(files) != 9 {
		t.Fatalf("%d real captures in testdata/ulp, want 9", len(files))
	}
	return files
}

func iwdumpOut(t *testing.T, args ...string) string {
	t.Helper()
	var out, errb bytes.Buffer
	if code := run(args, &out, &errb); code != exitOK {
		t.Fatalf("iwdump %v: exit %d: %s", args, code, errb.String())
	}
	return out.String()
}

// TestULPFieldsGolden: -T fields with the ULP fields on every real
// capture, against testdata/ulp/X.pcap.fields.txt (-update rewrites).
func TestULPFieldsGolden(t *testing.T) {
	for _, file := range realULPCaptures(t) {
		t.Run(filepath.Base(file), func(t *testing.T) {
			args := []string{"-r", file, "-T", "fields", "-E", "header=y"}
			for _, f := range ulpFieldSet(file) {
				args = append(args, "-e", f)
			}
			got := iwdumpOut(t, args...)
			golden := file + ".fields.txt"
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (go test ./cmd/iwdump -run TestULPFieldsGolden -update)", err)
			}
			if got != string(want) {
				gl, wl := strings.Split(got, "\n"), strings.Split(string(want), "\n")
				for i := range max(len(gl), len(wl)) {
					if i >= len(gl) || i >= len(wl) || gl[i] != wl[i] {
						t.Fatalf("line %d differs:\n got %q\nwant %q", i+1, at(gl, i), at(wl, i))
					}
				}
			}
			// Every column has a value on some line: the list is not stale.
			lines := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
			names := strings.Split(lines[0], "\t")
			for i, name := range names {
				seen := false
				for _, l := range lines[1:] {
					if cols := strings.Split(l, "\t"); i < len(cols) && cols[i] != "" {
						seen = true
						break
					}
				}
				// NFSv3 and NFSv4 fields: each capture has one version
				if !seen && !strings.HasPrefix(name, "nfs.") {
					t.Errorf("column %s is empty on every line", name)
				}
			}
		})
	}
}

func at(l []string, i int) string {
	if i < len(l) {
		return l[i]
	}
	return "<end>"
}

// TestULPFieldsOccurrence: a list field (nfs.ops) is one occurrence per
// item, and -E occurrence, aggregator, quote and separator apply to it as
// tshark applies them to its repeated nfs.opcode.
func TestULPFieldsOccurrence(t *testing.T) {
	file := "../../testdata/ulp/nfs42_rdma.pcap"
	line := func(opts ...string) string {
		args := append([]string{"-r", file, "-T", "fields", "-Y", "frame == 28", "-e", "frame", "-e", "nfs.ops", "-e", "rpc.xid"}, opts...)
		return strings.TrimSuffix(iwdumpOut(t, args...), "\n")
	}
	for _, c := range []struct {
		opts []string
		want string
	}{
		{nil, "28\tSEQUENCE,PUTROOTFH,SECINFO_NO_NAME\t0x441e09a4"},
		{[]string{"-E", "occurrence=f"}, "28\tSEQUENCE\t0x441e09a4"},
		{[]string{"-E", "occurrence=l"}, "28\tSECINFO_NO_NAME\t0x441e09a4"},
		{[]string{"-E", "aggregator=/s", "-E", "separator=,"}, "28,SEQUENCE PUTROOTFH SECINFO_NO_NAME,0x441e09a4"},
		{[]string{"-E", "quote=d", "-E", "separator=;", "-E", "header=y"}, "frame;nfs.ops;rpc.xid\n\"28\";\"SEQUENCE,PUTROOTFH,SECINFO_NO_NAME\";\"0x441e09a4\""},
	} {
		if got := line(c.opts...); got != c.want {
			t.Errorf("%v:\n got %q\nwant %q", c.opts, got, c.want)
		}
	}
	// Items that hold spaces stay whole: chunk segments, iSCSI keys.
	got := iwdumpOut(t, "-r", "../../testdata/ulp/gen_rpcrdma.pcap", "-T", "fields", "-E", "aggregator=|", "-e", "rpcrdma.chunks", "-Y", "rpcrdma.reply_segments == 3")
	if !strings.Contains(got, "reply 0x4001:4096@0x500000200|reply 0x4002:4096@0x500001200|reply 0x4003:4096@0x500002200\n") {
		t.Errorf("rpcrdma.chunks occurrences:\n%s", got)
	}
}

// TestULPGlossary: -G fields lists the storage protocols' fields, with
// tshark's columns, each field once.
func TestULPGlossary(t *testing.T) {
	out := iwdumpOut(t, "-G", "fields")
	fields := map[string][]string{}
	protos := map[string]bool{}
	for _, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		cols := strings.Split(l, "\t")
		switch cols[0] {
		case "P":
			protos[cols[2]] = true
		case "F":
			if len(cols) != 8 {
				t.Fatalf("F line with %d columns: %q", len(cols), l)
			}
			if _, dup := fields[cols[2]]; dup {
				t.Errorf("%s listed twice", cols[2])
			}
			fields[cols[2]] = cols
		default:
			t.Fatalf("line %q", l)
		}
	}
	for _, p := range []string{"nvme", "iser", "iscsi", "scsi", "smbd", "smb2", "rpcrdma", "rpc", "nfs", "ulp"} {
		if !protos[p] {
			t.Errorf("no P line for %s", p)
		}
	}
	for name, want := range map[string]string{
		"nvme.cid": "FT_UINT16 nvme BASE_DEC", "nvme.sgl.key": "FT_UINT32 nvme BASE_HEX", "nvme.slba": "FT_UINT64 nvme BASE_DEC",
		"nfs.ops": "FT_STRING nfs BASE_NONE", "smb2.session_id": "FT_UINT64 smb2 BASE_HEX", "smb2.command": "FT_UINT16 smb2 BASE_DEC",
		"iscsi.immediate": "FT_BOOLEAN iscsi BASE_NONE", "ulp.latency_ns": "FT_UINT64 ulp BASE_DEC",
		"nvme.connect.hostid": "FT_BYTES nvme BASE_NONE",
	} {
		c, ok := fields[name]
		if !ok {
			t.Errorf("%s not listed", name)
			continue
		}
		if got := strings.Join(c[3:6], " "); got != want {
			t.Errorf("%s: %s, want %s", name, got, want)
		}
	}
	// Every name -G lists, -e takes.
	var args []string
	for name := range fields {
		args = append(args, "-e", name)
	}
	iwdumpOut(t, append([]string{"-r", "../../testdata/ulp/gen_nvme.pcap", "-T", "fields"}, args...)...)
}

// ulpTsharkPair is a tshark field and the iwdump field it must equal.
type ulpTsharkPair struct {
	ts, ours string
	// how: "" the same text; "num" the same number (named values: iwdump
	// runs with -n, tshark writes hex for some); "names" tshark's numbers
	// named by its own value table (tshark -G values).
	how string
}

var ulpTsharkPairs = []ulpTsharkPair{
	{"smb_direct.version.min", "smbd.min_version", ""},
	{"smb_direct.version.max", "smbd.max_version", ""},
	{"smb_direct.version.negotiated", "smbd.negotiated_version", ""},
	{"smb_direct.credits.requested", "smbd.credits_requested", ""},
	{"smb_direct.credits.granted", "smbd.credits_granted", ""},
	{"smb_direct.status", "smbd.status", ""},
	{"smb_direct.max_read_write_size", "smbd.max_read_write_size", ""},
	{"smb_direct.preferred_send_size", "smbd.preferred_send_size", ""},
	{"smb_direct.max_receive_size", "smbd.max_receive_size", ""},
	{"smb_direct.max_fragmented_size", "smbd.max_fragmented_size", ""},
	{"smb_direct.flags", "smbd.flags", ""},
	{"smb_direct.remaining_length", "smbd.remaining", ""},
	{"smb_direct.data_offset", "smbd.data_offset", ""},
	{"smb_direct.data_length", "smbd.data_length", ""},
	{"smb2.cmd", "smb2.command", "num"},
	{"smb2.msg_id", "smb2.msg_id", ""},
	{"smb2.sesid", "smb2.session_id", ""},
	{"smb2.tid", "smb2.tree_id", ""},
	{"smb2.nt_status", "smb2.status", "num"},
	{"smb2.flags", "smb2.flags", ""},
	{"smb2.file_offset", "smb2.offset", ""},
	{"smb2.channel", "smb2.channel", "num"},
	{"smb2.buffer_descriptor.token", "smb2.token", ""},
	{"smb2.remaining_bytes", "smb2.remaining_bytes", ""},
	{"rpcordma.xid", "rpcrdma.xid", ""},
	{"rpcordma.version", "rpcrdma.vers", ""},
	{"rpcordma.flow_control", "rpcrdma.credits", ""},
	{"rpcordma.msg_type", "rpcrdma.proc", "num"},
	{"rpc.xid", "rpc.xid", ""},
	{"rpc.msgtyp", "rpc.msg_type", "num"},
	{"rpc.program", "rpc.program", "num"},
	{"rpc.programversion", "rpc.version", "first"},            // tshark repeats it in the NFS tree
	{"rpcordma.reads_count", "rpcrdma.read_segments", "zero"}, // iwdump: absent when 0
	{"rpc.procedure", "rpc.procedure", "num"},
	{"rpc.replystat", "rpc.reply_stat", "num"},
	{"rpc.state_accept", "rpc.accept_stat", "num"},
	{"nfs.opcode", "nfs.ops", "names"},
	{"nfs.minorversion", "nfs.minorversion", ""},
	{"nfs.procedure_v3", "nfs.procedure", "num"},
}

// TestULPFieldsAgainstTshark: iwdump -T fields against tshark -T fields
// (both with every occurrence) on the SMB Direct and RPC-over-RDMA
// captures, for the fields both decode. tshark's NVMe-oF and iSER
// dissectors hook InfiniBand only (ulp-reference §5.1): nothing to compare.
// Where only one side has a value, it must be one of tsharkULPOneSided.
func TestULPFieldsAgainstTshark(t *testing.T) {
	bin := oracle.Tshark(t)
	names := tsharkValueNames(t, bin, "nfs.opcode")
	for _, file := range realULPCaptures(t) {
		base := filepath.Base(file)
		if !strings.Contains(base, "smb") && !strings.Contains(base, "nfs") {
			continue
		}
		t.Run(base, func(t *testing.T) {
			targs := []string{"-r", file, "-n", "-o", "tcp.try_heuristic_first:TRUE", "-T", "fields", "-E", "aggregator=|", "-e", "frame.number"}
			oargs := []string{"-r", file, "-n", "-T", "fields", "-E", "aggregator=|", "-e", "frame"}
			for _, p := range ulpTsharkPairs {
				targs = append(targs, "-e", p.ts)
				oargs = append(oargs, "-e", p.ours)
			}
			var tout []byte
			var err error
			for try := 0; try < 3; try++ { // tshark sometimes exits 2 under load
				if tout, err = exec.Command(bin, targs...).Output(); err == nil {
					break
				}
			}
			if err != nil {
				t.Fatalf("tshark: %v", err)
			}
			ours := map[string][]string{}
			for _, l := range strings.Split(strings.TrimSuffix(iwdumpOut(t, oargs...), "\n"), "\n") {
				cols := strings.Split(l, "\t")
				ours[cols[0]] = cols
			}
			equal, oneSided := 0, map[string]int{}
			for _, l := range strings.Split(strings.TrimSuffix(string(tout), "\n"), "\n") {
				tc := strings.Split(l, "\t")
				oc := ours[tc[0]]
				if oc == nil {
					// iwdump has a line for every frame with an iWARP
					// PDU; tshark's other lines are RPC over plain TCP
					// (the NFSv4 callback, MOUNT) or no ULP at all.
					for i, p := range ulpTsharkPairs {
						if (strings.HasPrefix(p.ts, "smb_direct.") || strings.HasPrefix(p.ts, "rpcordma.")) && at(tc, i+1) != "" && at(tc, i+1) != "<end>" {
							t.Errorf("frame %s: tshark has %s, iwdump has no line", tc[0], p.ts)
						}
					}
					continue
				}
				for i, p := range ulpTsharkPairs {
					tv, ov := at(tc, i+1), ""
					if oc != nil {
						ov = at(oc, i+1)
					}
					if tv == "<end>" {
						tv = ""
					}
					if tv == "" && ov == "" {
						continue
					}
					if tv == "" || ov == "" {
						why := tsharkULPOneSided(p, tv, ov, func(name string) (string, string) {
							for j, q := range ulpTsharkPairs {
								if q.ours == name {
									return at(tc, j+1), at(oc, j+1)
								}
							}
							panic(name)
						})
						if why == "" {
							t.Errorf("frame %s %s: tshark %q, iwdump %s %q", tc[0], p.ts, tv, p.ours, ov)
						}
						oneSided[why]++
						continue
					}
					if msg := compareULPValue(p, tv, ov, names); msg != "" {
						t.Errorf("frame %s %s/%s: %s", tc[0], p.ts, p.ours, msg)
						continue
					}
					equal++
				}
			}
			t.Logf("%d values equal; one-sided: %v", equal, oneSided)
			if equal < 50 {
				t.Errorf("only %d values compared", equal)
			}
		})
	}
}

// tsharkULPOneSided names why a field is on one side only, or "". get
// returns a column of the line by iwdump's name: tshark's value, iwdump's.
func tsharkULPOneSided(p ulpTsharkPair, tv, ov string, get func(ours string) (string, string)) string {
	rpcOrNFS := strings.HasPrefix(p.ts, "rpc.") || strings.HasPrefix(p.ts, "nfs.")
	tMsg, _ := get("rpc.msg_type")
	_, oXID := get("rpcrdma.xid")
	_, oReads := get("rpcrdma.read_segments")
	switch {
	case ov == "" && tv == "0" && p.how == "zero":
		return "absent when zero"
	case ov == "" && tMsg == "1" && (p.ts == "rpc.program" || p.ts == "rpc.programversion" || p.ts == "rpc.procedure" || p.ts == "nfs.procedure_v3"):
		// tshark repeats the call's program, version and procedure on
		// the reply (generated fields); iwdump names the call in
		// ulp.command there.
		return "call fields on reply"
	case ov == "" && tMsg == "1" && p.ts == "nfs.opcode":
		// tshark lists a COMPOUND reply's operations too; iwdump lists
		// the call's.
		return "nfs reply ops"
	// RDMA_NOMSG: both decode the RPC reply from the RDMA Writes into the
	// reply chunk (issue 27; before, iwdump had no rpc.* there).
	case ov == "" && rpcOrNFS && oXID == "":
		// tshark shows a call with a read chunk again at the Read
		// Response that completes the chunk's data.
		return "call at its read chunk's end"
	case tv == "" && rpcOrNFS && oReads != "" && oReads != "0":
		// and shows no RPC header at the call's own Send.
		return "call with a read chunk"
	case ov == "" && (strings.HasPrefix(p.ts, "smb2.") || strings.HasPrefix(p.ts, "smb_direct.")):
		// tsharkSMBFragment: tshark shows the SMB2 header of a message
		// that SMB Direct fragmented at every fragment's frame ("reassembled
		// in"), iwdump at the frame that completes it.
		return "smb fragment"
	}
	return ""
}

func compareULPValue(p ulpTsharkPair, tv, ov string, names map[string]string) string {
	if strings.HasPrefix(p.ts, "smb2.") && p.how != "first" {
		// An SMB2 compound (NextCommand chain): both show every member's
		// header, one occurrence each (before issue 27, iwdump only the
		// first's); compared occurrence by occurrence. tshark may have
		// more: a field of the same name inside a command's body (the
		// second smb2.flags of an IOCTL response's interface list).
		ts, os := strings.Split(tv, "|"), strings.Split(ov, "|")
		if len(ts) > 1 || len(os) > 1 {
			if len(ts) < len(os) {
				return fmt.Sprintf("tshark %q, iwdump %q: iwdump has more occurrences", tv, ov)
			}
			ts = ts[:len(os)]
			for i := range os {
				if msg := compareULPValue(p, ts[i], os[i], names); msg != "" {
					return fmt.Sprintf("occurrence %d of %q / %q: %s", i+1, tv, ov, msg)
				}
			}
			return ""
		}
	}
	switch p.how {
	case "first":
		if tf, _, _ := strings.Cut(tv, "|"); tf != ov {
			return fmt.Sprintf("tshark %q, iwdump %q", tv, ov)
		}
	case "num":
		tn, ok1 := number(tv)
		on, ok2 := number(ov)
		if !ok1 || !ok2 || tn != on {
			return fmt.Sprintf("tshark %q, iwdump %q", tv, ov)
		}
	case "names":
		var named []string
		for _, n := range strings.Split(tv, "|") {
			named = append(named, names[n])
		}
		if strings.Join(named, "|") != ov {
			return fmt.Sprintf("tshark %q (%s), iwdump %q", tv, strings.Join(named, "|"), ov)
		}
	default:
		if tv != ov {
			return fmt.Sprintf("tshark %q, iwdump %q", tv, ov)
		}
	}
	return ""
}

// tsharkValueNames reads a field's value table from tshark -G values
// (V lines: field, number, name).
func tsharkValueNames(t *testing.T, bin, field string) map[string]string {
	out, err := exec.Command(bin, "-G", "values").Output()
	if err != nil {
		t.Fatalf("tshark -G values: %v", err)
	}
	m := map[string]string{}
	for _, l := range strings.Split(string(out), "\n") {
		c := strings.Split(l, "\t")
		if len(c) == 4 && c[0] == "V" && c[1] == field {
			m[c[2]] = c[3]
		}
	}
	if len(m) < 40 {
		t.Fatalf("tshark -G values: %d names for %s", len(m), field)
	}
	return m
}
