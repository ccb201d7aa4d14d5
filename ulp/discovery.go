package ulp

import (
	"net/netip"
	"sort"
	"strconv"
)

// NVMe-oF discovery, linked to what it announced. A host reads the
// discovery log page (Get Log Page, LID 0x70) from a discovery
// controller, then connects to the NVM subsystems its entries name: an
// entry's TRADDR and TRSVCID are the listener the host dials, its SUBNQN
// the NQN the host's Connect carries (NVMe-oF 1.1 §5.3, NVMe Base
// §5.16.1.23). The two are on different connections, often in different
// analysis shards: each Conn keeps what it saw (Discovery), the caller
// gathers them with the connections' numbers and addresses, and Links
// joins them once at the end of the run, the same on any number of
// workers.

// Announced is one discovery log page entry as a Get Log Page completion
// reported it.
type Announced struct {
	Frame int // the completion's frame
	Conn  int // the discovery controller's connection (set by the caller)
	Entry int // 0-based, in the log page
	// Trtype, Prtype (the RDMA provider type, iwarp for iWARP; "-" for a
	// non-RDMA entry), Traddr, Trsvcid and SubNQN as the entry spells them.
	Trtype, Prtype, Traddr, Trsvcid, SubNQN string
}

// Connected is an NVMe-oF Connect whose data the capture holds.
type Connected struct {
	Frame  int            // the Connect command's frame
	Conn   int            // set by the caller
	To     netip.AddrPort // the connection's Responder (set by the caller)
	QID    uint16
	SubNQN string
}

// Discovery is what a connection, or a whole run, saw of discovery.
type Discovery struct {
	Announced []Announced
	Connected []Connected
	// Dropped counts the entries and Connects not kept (MaxDiscovery).
	Dropped int
}

// MaxDiscovery bounds each list: a capture of many hosts discovering
// again and again keeps the first ones.
const MaxDiscovery = 4096

func (d *Discovery) announce(a Announced) {
	if len(d.Announced) >= MaxDiscovery {
		d.Dropped++
		return
	}
	d.Announced = append(d.Announced, a)
}

func (d *Discovery) connect(k Connected) {
	if len(d.Connected) >= MaxDiscovery {
		d.Dropped++
		return
	}
	d.Connected = append(d.Connected, k)
}

// Add adds o's entries and Connects, of connection conn whose Responder is
// to (the caller's numbers and addresses).
func (d *Discovery) Add(o *Discovery, conn int, to netip.AddrPort) {
	for _, a := range o.Announced {
		a.Conn = conn
		d.announce(a)
	}
	for _, k := range o.Connected {
		k.Conn, k.To = conn, to
		d.connect(k)
	}
	d.Dropped += o.Dropped
}

// Merge adds o's lists, with its connection numbers mapped by conn (a
// shard's numbers to the run's).
func (d *Discovery) Merge(o *Discovery, conn func(int) int) {
	for _, a := range o.Announced {
		a.Conn = conn(a.Conn)
		d.announce(a)
	}
	for _, k := range o.Connected {
		k.Conn = conn(k.Conn)
		d.connect(k)
	}
	d.Dropped += o.Dropped
}

// Link is a discovery log entry and the Connects that followed it to the
// listener and subsystem it names.
type Link struct {
	Announced
	Connected []Connected
}

// Links joins each entry with the later Connects to its listener
// (TRADDR:TRSVCID, as an address and a port) and subsystem (SUBNQN), in
// frame order; an entry no Connect used is listed with none (the host did
// not connect, or the capture did not see it). A Connect is matched to
// the latest entry before it that names it.
func (d *Discovery) Links() []Link {
	as := append([]Announced(nil), d.Announced...)
	sort.SliceStable(as, func(i, j int) bool { return as[i].Frame < as[j].Frame })
	ks := append([]Connected(nil), d.Connected...)
	sort.SliceStable(ks, func(i, j int) bool { return ks[i].Frame < ks[j].Frame })
	links := make([]Link, len(as))
	for i := range as {
		links[i].Announced = as[i]
	}
	for _, k := range ks {
		for i := len(as) - 1; i >= 0; i-- {
			if a := &as[i]; a.Frame < k.Frame && a.SubNQN == k.SubNQN && names(a, k.To) {
				links[i].Connected = append(links[i].Connected, k)
				break
			}
		}
	}
	return links
}

// names reports whether entry a's TRADDR and TRSVCID are the listener to.
func names(a *Announced, to netip.AddrPort) bool {
	ip, err := netip.ParseAddr(a.Traddr)
	if err != nil {
		return false
	}
	port, err := strconv.ParseUint(a.Trsvcid, 10, 16)
	return err == nil && ip.Unmap() == to.Addr().Unmap() && uint16(port) == to.Port()
}

// Discovery returns what the connection saw of discovery so far.
func (c *Conn) Discovery() *Discovery { return &c.disc }
