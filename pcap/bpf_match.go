package pcap

import (
	"errors"
	"fmt"

	"github.com/gopacket/gopacket/layers"
	"golang.org/x/net/bpf"
)

// FrameFilter applies a capture filter in user space, to frames read from a
// file: the same classic BPF program the kernel would run, executed by
// golang.org/x/net/bpf's VM. An expression is compiled for each link type
// met (a pcapng file may mix them); a program (-F) applies as it is.
type FrameFilter struct {
	expr string
	prog []bpf.RawInstruction
	vms  map[layers.LinkType]*bpf.VM
	errs map[layers.LinkType]error
}

// NewExprFilter compiles expr (for Ethernet first, so that a syntax error
// shows before any frame is read).
func NewExprFilter(expr string) (*FrameFilter, error) {
	ff := &FrameFilter{expr: expr, vms: map[layers.LinkType]*bpf.VM{}, errs: map[layers.LinkType]error{}}
	if _, err := ff.vm(layers.LinkTypeEthernet); err != nil {
		var fe *FilterError
		if !errors.As(err, &fe) || fe.Pos >= 0 || !fe.Unsupported {
			return nil, err
		}
	}
	return ff, nil
}

// NewProgramFilter runs prog on frames of every link type. A program that
// reads Linux packet metadata (VLAN tags, packet type) works only in the
// kernel and is refused.
func NewProgramFilter(prog []bpf.RawInstruction) (*FrameFilter, error) {
	if err := checkProgram(prog); err != nil {
		return nil, err
	}
	if usesAncillary(prog) {
		return nil, errors.New("the program reads Linux packet metadata (compiled for a live interface): it cannot filter a file")
	}
	vm, err := newVM(prog)
	if err != nil {
		return nil, err
	}
	return &FrameFilter{prog: prog, vms: map[layers.LinkType]*bpf.VM{0: vm}}, nil
}

func newVM(prog []bpf.RawInstruction) (*bpf.VM, error) {
	insns, ok := bpf.Disassemble(prog)
	if !ok {
		return nil, errors.New("the program has instructions golang.org/x/net/bpf cannot run")
	}
	return bpf.NewVM(insns)
}

func (ff *FrameFilter) vm(lt layers.LinkType) (*bpf.VM, error) {
	if ff.prog != nil {
		return ff.vms[0], nil
	}
	if vm, ok := ff.vms[lt]; ok {
		return vm, nil
	}
	if err, ok := ff.errs[lt]; ok {
		return nil, err
	}
	prog, err := CompileFilter(ff.expr, lt, FilterOptions{})
	var vm *bpf.VM
	if err == nil {
		vm, err = newVM(prog)
	}
	if err != nil {
		ff.errs[lt] = err
		return nil, err
	}
	ff.vms[lt] = vm
	return vm, nil
}

// Match reports whether the filter keeps f. An error means the filter
// cannot be applied to f's link type.
func (ff *FrameFilter) Match(f *Frame) (bool, error) {
	vm, err := ff.vm(f.LinkType)
	if err != nil {
		return false, fmt.Errorf("frame %d: %w", f.Number, err)
	}
	n, err := vm.Run(f.Data)
	if err != nil {
		return false, err
	}
	return n > 0, nil
}
