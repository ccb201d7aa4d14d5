package main

import (
	"strings"
	"testing"
)

// TestULPCodeNames: codes tools print by name are names in every face of
// iwdump — -T fields, -V, -T json — and the filter takes the name
// (issue 27): NVMe CNS and FID, SCSI ASC/ASCQ and service action, NFS stable_how, and the
// broadcast NSID reads 0xffffffff. On the real captures of testdata/ulp.
func TestULPCodeNames(t *testing.T) {
	for _, c := range []struct {
		file, field, filter, want, json string
	}{
		{"nvmeof.pcap", "nvme.cns", `nvme.cns == "Identify Controller"`, "Identify Controller", `"cns":"Identify Controller"`},
		{"nvmeof.pcap", "nvme.fid", `nvme.fid == 7`, "Number of Queues", `"fid":"Number of Queues"`},
		{"nvmeof.pcap", "nvme.nsid", `nvme.nsid == 4294967295`, "0xffffffff", `"nsid":4294967295`},
		{"iser.pcap", "scsi.asc", `scsi.asc == 0x2000`, "Invalid Command Operation Code", `"asc":"Invalid Command Operation Code"`},
		{"iser.pcap", "scsi.service_action", `scsi.service_action == 0x0c`, "REPORT SUPPORTED OPERATION CODES", `"service_action":"REPORT SUPPORTED OPERATION CODES"`},
		{"nfs3_rdma.pcap", "nfs.stable", `nfs.stable == "FILE_SYNC"`, "FILE_SYNC", `"stable":"FILE_SYNC"`},
		{"nfs3_rdma.pcap", "nfs.stable", `nfs.stable == 0`, "UNSTABLE", `"stable":"UNSTABLE"`},
	} {
		file := "../../testdata/ulp/" + c.file
		out := strings.TrimSpace(iwdumpOut(t, "-r", file, "-T", "fields", "-Y", c.filter, "-e", c.field))
		if out == "" {
			t.Errorf("%s: no PDU matches %s", c.file, c.filter)
			continue
		}
		for _, l := range strings.Split(out, "\n") {
			if l != c.want {
				t.Errorf("%s -T fields -e %s: %q, want %q", c.file, c.field, l, c.want)
			}
		}
		if v := iwdumpOut(t, "-r", file, "-V", "-Y", c.filter); !strings.Contains(v, c.field+" = "+c.want+"  (") {
			t.Errorf("%s -V -Y %s: no %q", c.file, c.filter, c.field+" = "+c.want)
		}
		if j := iwdumpOut(t, "-r", file, "-T", "json", "-Y", c.filter); !strings.Contains(j, c.json) {
			t.Errorf("%s -T json -Y %s: no %s", c.file, c.filter, c.json)
		}
	}
}
