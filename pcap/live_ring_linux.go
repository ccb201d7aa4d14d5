//go:build linux

package pcap

// The TPACKET_V3 receive ring (packet(7), Documentation/networking/
// packet_mmap.rst in the kernel): the kernel fills blocks of frames in
// ring order and hands each over by setting its status to
// TP_STATUS_USER; the reader gives it back with TP_STATUS_KERNEL. Here a
// block goes back once every holder is done with it (Block.Hold), so
// that a capture file can be written straight from the ring and a decoder
// can read the frames where the kernel put them: no copy in user space,
// as tcpdump writes its file. A block still held when the reader comes
// round to it again stops the reader (and the kernel, which drops and
// counts what it cannot store): holders must keep well under a ring.

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	xbpf "golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// ring is a TPACKET_V3 socket and its mapped blocks.
type ring struct {
	fd        int
	mem       []byte
	blockSize int
	blocks    []Block
	pos       int    // the block being read
	cur       *Block // nil: pos not yet handed over
	pkt       unsafe.Pointer
	left      uint32 // frames of cur not yet read
	vbuf      []byte // a frame with its VLAN tag put back
	pfd       [1]unix.PollFd

	closeMu sync.RWMutex // Close against Release
	closed  bool

	statsMu sync.Mutex
	stats   unix.TpacketStatsV3 // accumulated: the kernel resets on read
}

// Block is one block of the ring: the frames in it stay where they are
// until every holder has released it.
type Block struct {
	r    *ring
	base unsafe.Pointer // the block's first octet
	desc *unix.TpacketHdrV1
	refs atomic.Int32
	gen  uint64
}

// Hold keeps the block's frames valid until Release.
func (b *Block) Hold() { b.refs.Add(1) }

// Release gives up a hold; the last one gives the block back to the
// kernel.
func (b *Block) Release() {
	if b.refs.Add(-1) != 0 {
		return
	}
	b.r.closeMu.RLock()
	closed := b.r.closed
	if !closed {
		atomic.StoreUint32(&b.desc.Block_status, unix.TP_STATUS_KERNEL)
	}
	b.r.closeMu.RUnlock()
	if closed {
		// The ring was closed while this block was held: the last
		// holder's release unmaps it.
		b.r.closeMu.Lock()
		b.r.unmapIfIdle()
		b.r.closeMu.Unlock()
	}
}

// Gen tells the passes of the reader over the block apart.
func (b *Block) Gen() uint64 { return b.gen }

var errRingTimeout = errors.New("ring: poll timed out")

// openRingSocket sets up the ring on ifindex with prog attached.
func openRingSocket(ifindex, blockSize, blocks int, blockTimeout time.Duration, prog []xbpf.RawInstruction) (*ring, error) {
	// Protocol 0: the socket takes no frame before bind, and bind comes
	// after the ring is set up and a filter that takes nothing is on; the
	// real filter replaces it last. No frame gets in unfiltered.
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	r := &ring{fd: fd, blockSize: blockSize}
	fail := func(what string, err error) (*ring, error) {
		unix.Close(fd)
		if what == "" {
			return nil, err
		}
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	if err := attachFilter(fd, []xbpf.RawInstruction{{Op: 0x6, K: 0}}); err != nil { // ret #0
		return fail("attaching the capture filter", err)
	}
	if err := unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_VERSION, unix.TPACKET_V3); err != nil {
		return fail("TPACKET_V3", err)
	}
	const frameSize = 2048
	req := unix.TpacketReq3{Block_size: uint32(blockSize), Block_nr: uint32(blocks),
		Frame_size: frameSize, Frame_nr: uint32(blockSize / frameSize * blocks),
		Retire_blk_tov: uint32(max(blockTimeout/time.Millisecond, 1))}
	if err := unix.SetsockoptTpacketReq3(fd, unix.SOL_PACKET, unix.PACKET_RX_RING, &req); err != nil {
		return fail("setting up the ring", err)
	}
	r.mem, err = unix.Mmap(fd, 0, blockSize*blocks, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return fail("mapping the ring", err)
	}
	if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_ALL), Ifindex: ifindex}); err != nil {
		unix.Munmap(r.mem)
		return fail("", err)
	}
	r.blocks = make([]Block, blocks)
	for i := range r.blocks {
		d := (*unix.TpacketBlockDesc)(unsafe.Pointer(&r.mem[i*blockSize]))
		r.blocks[i] = Block{r: r, base: unsafe.Pointer(d), desc: (*unix.TpacketHdrV1)(unsafe.Pointer(&d.Hdr[0]))}
	}
	r.readStats() // the counters start now
	if err := attachFilter(fd, prog); err != nil {
		r.close()
		return nil, fmt.Errorf("attaching the capture filter: %w", err)
	}
	return r, nil
}

// frameInfo is what the ring says of a frame.
type frameInfo struct {
	ts      time.Time
	origLen int
	block   *Block // nil when data is not in the ring (a VLAN tag put back)
}

// next returns the next frame, waiting up to timeout for the kernel to
// hand a block over (errRingTimeout). data stays valid until the next call
// unless the block is held.
func (r *ring) next(timeout time.Duration) ([]byte, frameInfo, error) {
	var (
		deadline time.Time
		nap      time.Duration // > 0: poll cannot tell, sleep and look
	)
	for r.left == 0 {
		if r.cur != nil {
			// Done with this block: the reader's reference goes.
			r.cur.Release()
			r.cur = nil
			r.pos = (r.pos + 1) % len(r.blocks)
		}
		b := &r.blocks[r.pos]
		if b.refs.Load() == 0 && atomic.LoadUint32(&b.desc.Block_status)&unix.TP_STATUS_USER != 0 {
			b.gen++
			b.refs.Store(1)
			r.cur = b
			r.left = b.desc.Num_pkts
			r.pkt = unsafe.Add(b.base, b.desc.Offset_to_first_pkt)
			continue
		}
		if deadline.IsZero() {
			deadline = time.Now().Add(timeout)
		}
		wait := time.Until(deadline)
		if wait <= 0 {
			return nil, frameInfo{}, errRingTimeout
		}
		if nap > 0 || b.refs.Load() != 0 {
			// Still held from the last pass (the kernel waits here
			// too), or poll says a block is ready when it is one we
			// hold: the kernel signals while the block before the one
			// it fills is not back, whoever holds it.
			nap = min(max(nap*2, 100*time.Microsecond), 5*time.Millisecond, wait)
			time.Sleep(nap)
			continue
		}
		if err := r.poll(wait); err != nil {
			return nil, frameInfo{}, err
		}
		if atomic.LoadUint32(&b.desc.Block_status)&unix.TP_STATUS_USER == 0 {
			nap = 50 * time.Microsecond
		}
	}
	h := (*unix.Tpacket3Hdr)(r.pkt)
	r.left--
	if r.left > 0 {
		r.pkt = unsafe.Add(r.pkt, h.Next_offset)
	}
	data := unsafe.Slice((*byte)(unsafe.Add(unsafe.Pointer(h), h.Mac)), h.Snaplen)
	fi := frameInfo{ts: time.Unix(int64(h.Sec), int64(h.Nsec)), origLen: int(h.Len), block: r.cur}
	if h.Status&unix.TP_STATUS_VLAN_VALID != 0 || h.Hv1.Vlan_tci != 0 {
		// The kernel took the outer VLAN tag out of the frame; put it
		// back where it was, behind the two MAC addresses.
		if len(data) >= 12 {
			tpid := uint16(unix.ETH_P_8021Q)
			if h.Status&unix.TP_STATUS_VLAN_TPID_VALID != 0 && h.Hv1.Vlan_tpid != 0 {
				tpid = h.Hv1.Vlan_tpid
			}
			tci := h.Hv1.Vlan_tci
			r.vbuf = append(append(append(r.vbuf[:0], data[:12]...), byte(tpid>>8), byte(tpid), byte(tci>>8), byte(tci)), data[12:]...)
			data = r.vbuf
			fi.origLen += 4
			fi.block = nil
		}
	}
	return data, fi, nil
}

func (r *ring) poll(timeout time.Duration) error {
	r.pfd[0] = unix.PollFd{Fd: int32(r.fd), Events: unix.POLLIN | unix.POLLERR}
	n, err := unix.Poll(r.pfd[:], int(timeout/time.Millisecond))
	if err == unix.EINTR {
		return nil
	}
	if err != nil {
		return err
	}
	if n == 0 {
		return errRingTimeout
	}
	return nil
}

// readStats adds the kernel's counters (which it resets on each read) to
// the accumulated ones and returns those.
func (r *ring) readStats() (unix.TpacketStatsV3, error) {
	r.statsMu.Lock()
	defer r.statsMu.Unlock()
	s, err := unix.GetsockoptTpacketStatsV3(r.fd, unix.SOL_PACKET, unix.PACKET_STATISTICS)
	if err != nil {
		return r.stats, err
	}
	r.stats.Packets += s.Packets
	r.stats.Drops += s.Drops
	r.stats.Freeze_q_cnt += s.Freeze_q_cnt
	return r.stats, nil
}

func (r *ring) setPromisc(ifindex int) error {
	mreq := unix.PacketMreq{Ifindex: int32(ifindex), Type: unix.PACKET_MR_PROMISC}
	return unix.SetsockoptPacketMreq(r.fd, unix.SOL_PACKET, unix.PACKET_ADD_MEMBERSHIP, &mreq)
}

// close closes the socket and unmaps the ring, unless a holder (a -w
// writer or a decoder that has not finished with its frames) still holds
// a block: then the last Release unmaps it, so no holder ever reads
// memory that is gone. It is called once the reader has stopped.
func (r *ring) close() {
	r.closeMu.Lock()
	defer r.closeMu.Unlock()
	if r.closed {
		return
	}
	r.closed = true
	unix.Close(r.fd)
	if r.cur != nil { // the reader's own hold on the block it was reading
		r.cur.refs.Add(-1)
		r.cur = nil
	}
	r.unmapIfIdle()
}

// unmapIfIdle unmaps the closed ring once no block is held; closeMu is
// held.
func (r *ring) unmapIfIdle() {
	if r.mem == nil {
		return
	}
	for i := range r.blocks {
		if r.blocks[i].refs.Load() > 0 {
			return
		}
	}
	unix.Munmap(r.mem)
	r.mem = nil
}
