package export

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/iwkit/iwkit/ulp"
)

// ulpIDField is the response field that carries a command's id, by
// protocol.
var ulpIDField = map[string]string{"nvme": "nvme_cid", "iser": "iscsi_itt", "smbd": "smb2_msg_id", "rpcrdma": "rpcrdma_xid"}

// TestCommandsRoundTrip: on every storage-protocol capture, the commands
// rows read back with parquet-go are the commands the NDJSON records
// complete (the response PDU with ulp.command), value for value; what a
// row says the command addresses is what its request PDU carries; its
// findings are the NDJSON findings of its connection at its request and
// response frames.
func TestCommandsRoundTrip(t *testing.T) {
	files, _ := filepath.Glob("../testdata/ulp/*.pcap")
	if len(files) < 17 {
		t.Fatalf("%d captures in testdata/ulp", len(files))
	}
	total := 0
	seen := map[string]int{} // non-NULL, non-empty values by column
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			dir := t.TempDir()
			res := exportOne(t, file, dir)
			rows := readAll(t, dir, Commands)
			var resps []map[string]any
			requests := map[string][]map[string]any{} // by frame
			findings := map[string][]string{}         // conn/frame -> codes
			for _, o := range ndjson(t, file) {
				flat := map[string]any{}
				flatten("", o, flat)
				frame := flat["frame"].(json.Number).String()
				if f, ok := o["finding"].(map[string]any); ok {
					k := fmt.Sprint(flat["conn"], "/", frame)
					findings[k] = append(findings[k], f["code"].(string))
					continue
				}
				requests[frame] = append(requests[frame], flat)
				if ms, ok := o["members"].([]any); ok { // an SMB2 compound's later members: requests too
					for _, mb := range ms {
						mf := map[string]any{}
						flatten("", mb.(map[string]any), mf)
						requests[frame] = append(requests[frame], mf)
					}
				}
				if flat["ulp_command"] != nil {
					resps = append(resps, flat)
				}
			}
			if res.Counts.Commands != int64(len(rows)) {
				t.Errorf("%d command rows, counted %d", len(rows), res.Counts.Commands)
			}
			// A response completes one command, or an SMB2 compound
			// (smb2.compound > 1) several: NDJSON's ulp.* are the first's.
			next, compound := 0, 0
			unanswered := map[ulp.CmdKey]uint64{}
			for i, row := range rows {
				what := fmt.Sprintf("command %d (frame %v)", i, row["frame"])
				if row["answered"] == false {
					checkUnanswered(t, what, row)
					checkTarget(t, what, row, requests[strconv.FormatInt(row["request_frame"].(int64), 10)])
					unanswered[ulp.CmdKey{Proto: protoByName[row["proto"].(string)], Name: row["command"].(string)}]++
					continue
				}
				if row["age_ns"] != nil || row["latency_ns"] == nil {
					t.Errorf("%s: answered, with age %v and latency %v", what, row["age_ns"], row["latency_ns"])
				}
				var o map[string]any
				if next < len(resps) && same(resps[next]["frame"], row["frame"]) && same(resps[next]["ulp_request_frame"], row["request_frame"]) {
					o = resps[next]
					next++
				} else if next > 0 && same(resps[next-1]["frame"], row["frame"]) && resps[next-1]["smb2_compound"] != nil {
					compound++
					continue
				} else {
					t.Errorf("%s: no NDJSON response", what)
					continue
				}
				for col, key := range map[string]string{"frame": "frame", "conn": "conn", "dir": "dir", "src": "src", "dst": "dst",
					"proto": "ulp_proto", "command": "ulp_command", "request_frame": "ulp_request_frame", "latency_ns": "ulp_latency_ns",
					"rdma_octets": "ulp_rdma_octets", "expected_octets": "ulp_expected", "inline_octets": "ulp_inline",
					"rdma_reads": "ulp_rdma_reads", "rdma_writes": "ulp_rdma_writes", "id": ulpIDField[row["proto"].(string)]} {
					v, ok := o[key]
					if !ok && strings.HasPrefix(key, "ulp_") {
						v = json.Number("0") // NDJSON leaves out the zero counts
					}
					if !same(v, row[col]) {
						t.Errorf("%s: %s = %v, NDJSON %s = %v", what, col, row[col], key, v)
					}
				}
				checkRDMA(t, what, row, o["ulp_rdma"], o["ulp_rdma_dropped"]) // rdma_test.go
				if got := seconds(row["time_rel_ns"].(int64)); got != o["time"].(json.Number).String() {
					t.Errorf("%s: time %v, NDJSON %v", what, got, o["time"])
				}
				checkTarget(t, what, row, requests[strconv.FormatInt(row["request_frame"].(int64), 10)])
				var want []string
				for _, f := range []int64{row["request_frame"].(int64), row["frame"].(int64)} {
					want = append(want, findings[fmt.Sprint(row["conn"], "/", f)]...)
					if f == row["frame"].(int64) && f == row["request_frame"].(int64) {
						break
					}
				}
				got := row["findings"].([]string)
				slices.Sort(got)
				slices.Sort(want)
				if !slices.Equal(got, want) {
					t.Errorf("%s: findings %v, NDJSON at its frames %v", what, got, want)
				}
			}
			if next != len(resps) {
				t.Errorf("%d NDJSON responses, %d matched", len(resps), next)
			}
			// The unanswered rows are what -z nvme/iscsi/smb2/rpc count
			// (package ulp's report).
			for k, r := range res.Report.ULP.ByName {
				if unanswered[k] != r.Unanswered {
					t.Errorf("%v: %d unanswered rows, -z counts %d", k, unanswered[k], r.Unanswered)
				}
				delete(unanswered, k)
			}
			for k, n := range unanswered {
				t.Errorf("%v: %d unanswered rows, not in the report", k, n)
			}
			if compound > 0 {
				t.Logf("%d commands of SMB2 compounds", compound)
			}
			total += len(rows)
			for _, row := range rows {
				for k, v := range row {
					if l, ok := v.([]string); ok && len(l) == 0 {
						continue
					}
					if l, ok := v.([]uint64); ok && len(l) == 0 {
						continue
					}
					seen[k]++
				}
			}
		})
	}
	if total < 100 {
		t.Errorf("only %d commands compared", total)
	}
	for _, c := range Commands.Cols {
		if seen[c.Name] == 0 {
			t.Errorf("column %s is NULL or empty on every row", c.Name)
		}
	}
}

// protoByName are the protocols by commands.proto.
var protoByName = map[string]ulp.Proto{"nvme": ulp.NVMe, "iser": ulp.ISER, "smbd": ulp.SMBD, "rpcrdma": ulp.RPCRDMA}

// checkUnanswered: an unanswered row has no status and no latency, its
// age is from its request to the end it is reported at, and it is
// standing when ulp says so (an NVMe Asynchronous Event Request).
func checkUnanswered(t *testing.T, what string, row Row) {
	t.Helper()
	if row["status"] != nil || row["ok"] != false || row["latency_ns"] != nil {
		t.Errorf("%s: unanswered with status %v, ok %v, latency %v", what, row["status"], row["ok"], row["latency_ns"])
	}
	age, _ := row["age_ns"].(int64)
	if start, end := row["start_time"].(time.Time), row["time"].(time.Time); row["age_ns"] == nil || age != int64(end.Sub(start)) || age < 0 {
		t.Errorf("%s: age %v, time %v - start_time %v", what, row["age_ns"], end, start)
	}
	aer := row["proto"] == "nvme" && row["command"] == "Asynchronous Event Request"
	if row["standing"] != aer {
		t.Errorf("%s: %v standing = %v", what, row["command"], row["standing"])
	}
	if row["frame"].(int64) != 0 && row["frame"].(int64) < row["request_frame"].(int64) {
		t.Errorf("%s: reported at frame %v, before its request %v", what, row["frame"], row["request_frame"])
	}
}

// checkTarget holds a row's NSID, LUN, LBA, blocks, offset, length and
// STags to the request PDU that opened the command.
func checkTarget(t *testing.T, what string, row Row, reqs []map[string]any) {
	t.Helper()
	idKey := ulpIDField[row["proto"].(string)]
	var req map[string]any
	for _, r := range reqs {
		// commands.id is the RPC xid, which a bad transport header may
		// not repeat (rpcrdma.xid_mismatch).
		if r["ulp_command"] == nil && (same(r[idKey], row["id"]) || row["proto"] == "rpcrdma" && same(r["rpc_xid"], row["id"])) {
			req = r
		}
	}
	if req == nil {
		t.Errorf("%s: no request PDU with %s = %v at frame %v", what, idKey, row["id"], row["request_frame"])
		return
	}
	for col, keys := range map[string][]string{"nsid": {"nvme_nsid"}, "lun": {"iscsi_lun"}, "lba": {"nvme_slba", "scsi_lba"},
		"blocks": {"nvme_nlb", "scsi_blocks"}, "file_offset": {"nfs_offset", "smb2_offset"}, "length": {"nfs_count", "smb2_length"}} {
		var v any
		for _, k := range keys {
			if x, ok := req[k]; ok {
				v = x
			}
		}
		if (v == nil) != (row[col] == nil) || v != nil && !same(v, row[col]) {
			t.Errorf("%s: %s = %v, request %v = %v", what, col, row[col], keys, v)
		}
	}
	// Every STag is in the request: a number field, or hex in a list.
	text, _ := json.Marshal(req)
	for _, s := range row["stags"].([]uint64) {
		if !strings.Contains(string(text), strconv.FormatUint(s, 10)) && !strings.Contains(string(text), strconv.FormatUint(s, 16)) {
			t.Errorf("%s: STag %#x not in its request %s", what, s, text)
		}
	}
}
