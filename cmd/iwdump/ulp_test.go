package main

import (
	"bytes"
	"strings"
	"testing"
)

// --decode-as PORT=proto forces a storage protocol; an unknown one is a
// usage error; -z nvme prints its table.
func TestDecodeAsULP(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"-r", "../../testdata/ulp/gen_nvme.pcap", "--decode-as", "4420=nvme", "-z", "nvme", "-Y", `nvme.opcode == "Write"`}, &out, &errb); code != exitOK {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if !strings.Contains(out.String(), "| NVMe Write cid 8193 nsid 1 lba 2048 len 8 key 0x48bc2e10") || !strings.Contains(out.String(), "NVMe-oF commands") {
		t.Errorf("output:\n%s", out.String())
	}
	out.Reset()
	errb.Reset()
	if code := run([]string{"-r", "../../testdata/ulp/gen_nvme.pcap", "--decode-as", "4420=fcp"}, &out, &errb); code != exitUsage || !strings.Contains(errb.String(), "unknown protocol") {
		t.Errorf("--decode-as 4420=fcp: exit %d, %s", code, errb.String())
	}
}
