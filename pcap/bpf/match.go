package bpf

import (
	"errors"

	"github.com/gopacket/gopacket/layers"
	"golang.org/x/net/bpf"
)

// Filter applies a capture filter in user space, to frames read from a
// file: the same classic BPF program the kernel would run, executed by
// golang.org/x/net/bpf's VM. An expression is compiled for each link type
// met (a pcapng file may mix them); a program (-F) applies as it is.
type Filter struct {
	expr string
	prog []bpf.RawInstruction
	vms  map[layers.LinkType]*bpf.VM
	errs map[layers.LinkType]error
}

// NewFilter compiles expr (for Ethernet first, so that a syntax error
// shows before any frame is read).
func NewFilter(expr string) (*Filter, error) {
	ff := &Filter{expr: expr, vms: map[layers.LinkType]*bpf.VM{}, errs: map[layers.LinkType]error{}}
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
	return &Filter{prog: prog, vms: map[layers.LinkType]*bpf.VM{0: vm}}, nil
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
		return ff.vms[0], nil
	}
	if vm, ok := ff.vms[lt]; ok {
		return vm, nil
	}
	if err, ok := ff.errs[lt]; ok {
		return nil, err
	}
	prog, err := Compile(ff.expr, lt, Options{})
	var vm *bpf.VM
	if err == nil {
		vm, err = NewVM(prog)
	}
	if err != nil {
		ff.errs[lt] = err
		return nil, err
	}
	ff.vms[lt] = vm
	return vm, nil
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
