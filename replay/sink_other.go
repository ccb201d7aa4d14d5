//go:build !linux

package replay

import "errors"

// Interface is a Sink on a network interface; only Linux has one.
type Interface struct{}

// OpenInterface is not supported off Linux.
func OpenInterface(name string) (*Interface, error) {
	return nil, errors.New("replay: sending on an interface needs Linux (AF_PACKET)")
}

func (s *Interface) Name() string { return "" }
func (s *Interface) Send(frame []byte) (Retries, error) {
	return Retries{}, errors.New("replay: unsupported")
}
func (s *Interface) Close() error { return nil }
