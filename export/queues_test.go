package export

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestConnectionQueues: on every storage-protocol capture, a connection
// row's queue columns are what the connection's own PDUs said, read from
// the NDJSON (another face of the same run): the NVMe QID (the first the
// CM request or the Connect named), the CNTLID of the Connect response and the SUBNQN of the
// Connect data; the iSCSI TargetName of the Login Request's keys and the
// TSIH of the Login Response; the SMB2 shares the messages name, in the
// order first named; and ulp_commands, ulp_unanswered count the
// connection's rows in commands.
func TestConnectionQueues(t *testing.T) {
	files, _ := filepath.Glob("../testdata/ulp/*.pcap")
	checked := map[string]int{}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			dir := t.TempDir()
			exportOne(t, file, dir)
			type truth struct {
				proto, subnqn, target string
				qid, cntlid, tsih     string
				shares                []string
				cmds, unanswered      int64
			}
			want := map[string]*truth{} // by conn
			get := func(conn any) *truth {
				k := fmt.Sprint(conn)
				if want[k] == nil {
					want[k] = &truth{}
				}
				return want[k]
			}
			for _, o := range ndjson(t, file) {
				if _, ok := o["finding"]; ok {
					continue
				}
				msgs := []map[string]any{o}
				if ms, ok := o["members"].([]any); ok {
					for _, m := range ms {
						msgs = append(msgs, m.(map[string]any))
					}
				}
				for _, m := range msgs {
					f := map[string]any{}
					flatten("", m, f)
					w := get(o["conn"])
					if p, ok := f["ulp_proto"].(string); ok {
						w.proto = p
					}
					num := func(k string, into *string) {
						if v, ok := f[k].(json.Number); ok {
							*into = v.String()
						}
					}
					if w.qid == "" { // the first named: a Connect naming another QID than the CM's is a finding (nvme.connect_mismatch)
						num("nvme_qid", &w.qid)
					}
					num("nvme_cntlid", &w.cntlid)
					if v, ok := f["nvme_connect_subnqn"].(string); ok {
						w.subnqn = v
					}
					if keys, ok := f["iscsi_keys"].(string); ok && o["dir"] == "i2r" && f["iscsi_opcode"] == "Login Request" {
						for _, kv := range strings.Split(keys, " ") {
							if v, ok := strings.CutPrefix(kv, "TargetName="); ok {
								w.target = v
							}
						}
					}
					if v, ok := f["iscsi_login_tsih"].(json.Number); ok && v.String() != "0" {
						w.tsih = v.String()
					}
					if s, ok := f["smb2_share"].(string); ok && !slices.Contains(w.shares, s) {
						w.shares = append(w.shares, s)
					}
				}
			}
			for _, c := range readAll(t, dir, Commands) {
				w := get(c["conn"])
				w.cmds++
				if c["answered"] == false {
					w.unanswered++
				}
			}
			str := func(v any) string {
				if v == nil {
					return ""
				}
				return fmt.Sprint(v)
			}
			for _, r := range readAll(t, dir, Connections) {
				w := get(r["conn"])
				where := fmt.Sprintf("conn %v", r["conn"])
				if w.proto == "" {
					if r["ulp_proto"] != nil {
						t.Errorf("%s: ulp_proto %v on a connection with no storage PDU", where, r["ulp_proto"])
					}
					continue
				}
				shares := []string{}
				if l, ok := r["smb2_shares"].([]string); ok {
					shares = l
				}
				if w.shares == nil {
					w.shares = []string{}
				}
				got := fmt.Sprint(str(r["ulp_proto"]), "|", str(r["nvme_qid"]), "|", str(r["nvme_cntlid"]), "|", str(r["nvme_subnqn"]), "|",
					str(r["iscsi_target"]), "|", str(r["iscsi_tsih"]), "|", shares, "|", str(r["ulp_commands"]), "|", str(r["ulp_unanswered"]))
				exp := fmt.Sprint(w.proto, "|", w.qid, "|", w.cntlid, "|", w.subnqn, "|", w.target, "|", w.tsih, "|", w.shares, "|", w.cmds, "|", w.unanswered)
				if got != exp {
					t.Errorf("%s: queue columns\n %s\nwant (NDJSON, commands)\n %s", where, got, exp)
				}
				checked[w.proto]++
				if w.qid != "" || w.target != "" || len(w.shares) > 0 {
					checked["named"]++
				}
			}
		})
	}
	t.Logf("connections checked: %v", checked)
	for _, p := range []string{"nvme", "iser", "smbd", "rpcrdma", "named"} {
		if checked[p] == 0 {
			t.Errorf("no %s connection checked", p)
		}
	}
}
