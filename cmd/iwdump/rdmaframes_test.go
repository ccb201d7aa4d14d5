package main

import (
	"bytes"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestWorkersSameRDMAFrames: the operations ulp lists per command
// (ulp.rdma.* on the response, issue 27) are the same whatever the
// worker count: a connection lives in one shard, its frame numbers are
// the capture's. On each storage capture of testdata/ulp alone, and on
// all of them merged into one input (many connections spread over the
// shards), -V, -T json and -T fields print the same octets with 1, 2 and
// 3 workers, and list the operations.
func TestWorkersSameRDMAFrames(t *testing.T) {
	files, _ := filepath.Glob("../../testdata/ulp/*.pcap")
	if len(files) < 17 {
		t.Fatalf("%d captures in testdata/ulp", len(files))
	}
	var inputs [][]string
	var all []string
	for _, f := range files {
		inputs = append(inputs, []string{"-r", f})
		all = append(all, "-r", f)
	}
	inputs = append(inputs, all)
	modes := [][]string{{"-V"}, {"-T", "json"}, {"-T", "fields", "-e", "frame", "-e", "ulp.command", "-e", "ulp.rdma.op", "-e", "ulp.rdma.frame", "-e", "ulp.rdma.response_last_frame", "-E", "occurrence=a"}}
	ops := 0
	for _, in := range inputs {
		for _, m := range modes {
			var want []byte
			for _, w := range []int{1, 2, 3} {
				var out, errb bytes.Buffer
				if code := run(append(append([]string{"--workers", strconv.Itoa(w)}, in...), m...), &out, &errb); code != exitOK {
					t.Fatalf("%v %v --workers %d: exit %d: %s", in, m, w, code, errb.String())
				}
				if w == 1 {
					want = out.Bytes()
					if m[0] == "-V" {
						ops += strings.Count(out.String(), "ulp.rdma.op = ")
					}
					continue
				}
				if !bytes.Equal(out.Bytes(), want) {
					t.Errorf("%v %v: --workers %d differs from --workers 1 at %s", in, m, w, firstDiff(out.Bytes(), want))
				}
			}
		}
	}
	if ops < 300 { // each capture's, then all of them again merged
		t.Errorf("-V listed %d operations", ops)
	}
}
