package ulp_test

import (
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
