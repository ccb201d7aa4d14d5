package bpf

import (
	"errors"
	"sync"
	"sync/atomic"

	"github.com/gopacket/gopacket/layers"
	"golang.org/x/net/bpf"
)

// Filter applies a capture filter in user space, to frames read from a
// file: the same classic BPF program the kernel would run, executed by
// golang.org/x/net/bpf's VM. An expression is compiled for each link type
// met (a pcapng file may mix them); a program (-F) applies as it is.
//
// A Filter is safe for concurrent use: compiled once, it serves every pass
// over the frames (iwtui filters while it indexes). The compiled programs
// are an immutable map replaced whole when a new link type is met, so
// Match reads it without a lock.
type Filter struct {
	expr string
	prog []bpf.RawInstruction
	mu   sync.Mutex // serialises compiling for a new link type
	vms  atomic.Pointer[map[layers.LinkType]compiled]
}

// compiled is an expression compiled for one link type: its VM, or why it
// cannot run there.
type compiled struct {
	vm  *bpf.VM
	err error
}

// NewFilter compiles expr (for Ethernet first, so that a syntax error
// shows before any frame is read).
func NewFilter(expr string) (*Filter, error) {
	ff := &Filter{expr: expr}
	ff.vms.Store(&map[layers.LinkType]compiled{})
	if _, err := ff.vm(layers.LinkTypeEthernet); err != nil {
		var fe *Error
		if !errors.As(err, &fe) || fe.Pos >= 0 || !fe.Unsupported {
			return nil, err
		}
	}
	return ff, nil
}

// NewProgramFilter runs prog on frames of every link type. A program that
// reads Linux packet metadata (VLAN tags, packet type) works only in the
// kernel and is refused.
func NewProgramFilter(prog []bpf.RawInstruction) (*Filter, error) {
	if err := Check(prog); err != nil {
		return nil, err
	}
	if UsesAncillary(prog) {
		return nil, errors.New("the program reads Linux packet metadata (compiled for a live interface): it cannot filter a file")
	}
	vm, err := NewVM(prog)
	if err != nil {
		return nil, err
	}
	ff := &Filter{prog: prog}
	ff.vms.Store(&map[layers.LinkType]compiled{0: {vm: vm}})
	return ff, nil
}

// NewVM readies prog for golang.org/x/net/bpf's user-space VM.
func NewVM(prog []bpf.RawInstruction) (*bpf.VM, error) {
	insns, ok := bpf.Disassemble(prog)
	if !ok {
		return nil, errors.New("the program has instructions golang.org/x/net/bpf cannot run")
	}
	return bpf.NewVM(insns)
}

func (ff *Filter) vm(lt layers.LinkType) (*bpf.VM, error) {
	if ff.prog != nil {
		lt = 0
	}
	if c, ok := (*ff.vms.Load())[lt]; ok {
		return c.vm, c.err
	}
	ff.mu.Lock()
	defer ff.mu.Unlock()
	old := *ff.vms.Load()
	if c, ok := old[lt]; ok { // compiled while this one waited
		return c.vm, c.err
	}
	prog, err := Compile(ff.expr, lt, Options{})
	var vm *bpf.VM
	if err == nil {
		vm, err = NewVM(prog)
	}
	m := make(map[layers.LinkType]compiled, len(old)+1)
	for k, v := range old {
		m[k] = v
	}
	m[lt] = compiled{vm, err}
	ff.vms.Store(&m)
	return vm, err
}

// Match reports whether the filter keeps frame, a frame of link type lt.
// An error means the filter cannot be applied to that link type.
func (ff *Filter) Match(lt layers.LinkType, frame []byte) (bool, error) {
	vm, err := ff.vm(lt)
	if err != nil {
		return false, err
	}
	n, err := vm.Run(frame)
	if err != nil {
		return false, err
	}
	return n > 0, nil
}
