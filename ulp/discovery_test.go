package ulp_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/iwkit/iwkit/gen"
)

// discoveryEntry is one 1024-octet discovery log entry (NVMe Base
// §5.16.1.23): an RDMA port whose TSAS names the provider type prtype.
func discoveryEntry(addr, svc, nqn string, prtype byte) []byte {
	e := make([]byte, 1024)
	e[0], e[1], e[2] = 1, 1, 2 // RDMA, IPv4, NVM subsystem
	le.PutUint16(e[6:], 0xFFFF)
	le.PutUint16(e[8:], 32)
	copy(e[32:64], svc+strings.Repeat(" ", 32-len(svc)))
	copy(e[256:], nqn)
	copy(e[512:768], addr+strings.Repeat(" ", 256-len(addr)))
	e[768], e[769], e[770] = 1, prtype, 1 // reliable connected, prtype, RDMA_IP_CM
	return e
}

// TestNVMeDiscoveryLog: a discovery controller's Get Log Page (LID 0x70),
// the log page placed by RDMA Write, decoded with the completion: the
// records, their addresses and the RDMA provider type naming iWARP.
func TestNVMeDiscoveryLog(t *testing.T) {
	log := make([]byte, 1024)
	le.PutUint64(log[8:], 2) // NUMREC
	log = append(log, discoveryEntry("192.168.10.2", "4420", "nqn.2024-01.org.iwkit:sub1", 5)...)
	log = append(log, discoveryEntry("192.168.20.2", "4420", "nqn.2024-01.org.iwkit:sub2", 4)...)
	glp := sqe(0x02, 0x1002, 0, 0x4F, 0x7f0000500000, uint32(len(log)), 0x48bc2e40)
	glp[40] = 0x70
	le.PutUint16(glp[42:], uint16(len(log)/4-1))
	admin := nvmeConn("10.0.0.1:40001", 0,
		send("i2r", connectSQE(0x1001, 0x4F, 0x7f0000200000, 1024, 0x1a2b3c01, 0, 31)),
		gen.Op{Op: "read", Dir: "r2i", Payload: connectData(0xFFFF), STag: p32(0x1a2b3c01), TO: p64(0x7f0000200000), SinkSTag: p32(0x9001), SinkTO: p64(0x1000)},
		sendInv(cqe(0x1001, 1, 0, 1, 0), 0x1a2b3c01),
		send("i2r", glp),
		gen.Op{Op: "write", Dir: "r2i", Payload: log, STag: p32(0x48bc2e40), TO: p64(0x7f0000500000)},
		sendInv(cqe(0x1002, 2, 0, 0, 0), 0x48bc2e40),
	)
	sc := &gen.Scenario{Name: "nvme-discovery", Seed: 3, Connections: []gen.Connection{admin}}
	col, _ := analyzeBytes(t, genPcap(t, sc), analyzeConfig())
	checkClean(t, col, []string{
		"NVMe Get Log Page cid 4098 Discovery",
		"discovery records 2 [rdma/iwarp 192.168.10.2:4420 nqn.2024-01.org.iwkit:sub1] [rdma/rocev2 192.168.20.2:4420 nqn.2024-01.org.iwkit:sub2]",
	})
	found := false
	for _, f := range col.fields {
		if strings.Contains(f["json"], `"rdma_prtype":"iwarp,rocev2"`) && strings.Contains(f["json"], `"traddr":"192.168.10.2,192.168.20.2"`) {
			found = true
		}
	}
	if !found {
		t.Errorf("no field names the iWARP provider type")
	}
}

// TestNVMeDiscoveryLinks: a host reads the discovery log page from a
// discovery controller, then connects an admin and an I/O queue to the
// first entry's listener and subsystem: the run's Discovery links that
// entry to both Connects (QID 0 and 1, on their own connections), and
// lists the entries no host used with none, the same on 1 and 3 workers
// (the three connections go to different shards).
func TestNVMeDiscoveryLinks(t *testing.T) {
	const sub1, sub2 = "nqn.2024-01.org.iwkit:sub1", "nqn.2024-01.org.iwkit:sub2"
	log := make([]byte, 1024)
	le.PutUint64(log[8:], 3) // NUMREC
	log = append(log, discoveryEntry("10.0.0.2", "4420", sub1, 5)...)
	log = append(log, discoveryEntry("10.0.0.2", "4421", sub2, 5)...)
	log = append(log, discoveryEntry("192.168.20.2", "4420", sub1, 4)...)
	glp := sqe(0x02, 0x1002, 0, 0x4F, 0x7f0000500000, uint32(len(log)), 0x48bc2e40)
	glp[40] = 0x70
	le.PutUint16(glp[42:], uint16(len(log)/4-1))
	dcd := connectData(0xFFFF)
	copy(dcd[256:512], make([]byte, 256))
	copy(dcd[256:], "nqn.2014-08.org.nvmexpress.discovery")
	disc := nvmeConn("10.0.0.1:39999", 0,
		send("i2r", connectSQE(0x1001, 0x4F, 0x7f0000200000, 1024, 0x1a2b3c01, 0, 31)),
		gen.Op{Op: "read", Dir: "r2i", Payload: dcd, STag: p32(0x1a2b3c01), TO: p64(0x7f0000200000), SinkSTag: p32(0x9001), SinkTO: p64(0x1000)},
		sendInv(cqe(0x1001, 1, 0, 1, 0), 0x1a2b3c01),
		send("i2r", glp),
		gen.Op{Op: "write", Dir: "r2i", Payload: log, STag: p32(0x48bc2e40), TO: p64(0x7f0000500000)},
		sendInv(cqe(0x1002, 2, 0, 0, 0), 0x48bc2e40),
	)
	disc.Server = "10.0.0.2:8009"
	admin := nvmeConn("10.0.0.1:40001", 0,
		send("i2r", connectSQE(0x1001, 0x4F, 0x7f0000200000, 1024, 0x1a2b3c01, 0, 31)),
		gen.Op{Op: "read", Dir: "r2i", Payload: connectData(0xFFFF), STag: p32(0x1a2b3c01), TO: p64(0x7f0000200000), SinkSTag: p32(0x9001), SinkTO: p64(0x1000)},
		sendInv(cqe(0x1001, 1, 0, 1, 0), 0x1a2b3c01),
	)
	io := nvmeConn("10.0.0.1:40002", 1,
		send("i2r", append(connectSQE(1, 0x01, 0, 1024, 0, 1, 31), connectData(1)...)),
		send("r2i", cqe(1, 1, 1, 1, 0)),
	)
	first := 0 // the host connects once it has read the log page
	admin.After, io.After = &first, &first
	sc := &gen.Scenario{Name: "nvme-discovery-links", Seed: 3, Connections: []gen.Connection{disc, admin, io}}
	data := genPcap(t, sc)
	var want string
	for _, workers := range []int{1, 3} {
		cfg := analyzeConfig()
		cfg.Workers = workers
		_, rep := analyzeBytes(t, data, cfg)
		links := rep.Discovery.Links()
		var b strings.Builder
		for _, l := range links {
			fmt.Fprintf(&b, "entry %d frame %d conn %d %s/%s %s:%s %s ->", l.Entry, l.Frame, l.Conn, l.Trtype, l.Prtype, l.Traddr, l.Trsvcid, l.SubNQN)
			for _, k := range l.Connected {
				fmt.Fprintf(&b, " conn %d qid %d frame %d to %s;", k.Conn, k.QID, k.Frame, k.To)
			}
			b.WriteString("\n")
		}
		got := b.String()
		t.Logf("%d workers:\n%s", workers, got)
		if workers == 1 {
			want = got
			if len(links) != 3 || len(links[0].Connected) != 2 || len(links[1].Connected) != 0 || len(links[2].Connected) != 0 {
				t.Fatalf("links: want entry 0 with the admin and the I/O queue's Connects, the others with none")
			}
			k0, k1 := links[0].Connected[0], links[0].Connected[1]
			if k0.QID != 0 || k1.QID != 1 || k0.Conn == k1.Conn || k0.Conn == links[0].Conn || k0.To.String() != "10.0.0.2:4420" || k0.Frame <= links[0].Frame {
				t.Errorf("entry 0's Connects: %+v", links[0].Connected)
			}
			if links[0].Prtype != "iwarp" {
				t.Errorf("entry 0's provider type %q, want iwarp", links[0].Prtype)
			}
			continue
		}
		if got != want {
			t.Errorf("%d workers differ from 1:\n%s", workers, got)
		}
	}
}
