package capture

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/gopacket/gopacket/layers"
	"github.com/iwkit/iwkit/pcap"
	pcapbpf "github.com/iwkit/iwkit/pcap/bpf"
)

// Message words a capture input error for the user of command cmd: for
// filter syntax the compiler does not cover it says how to use tcpdump's
// compiler instead, for a missing permission how to grant it, for an
// unknown interface how to list them.
func Message(cmd string, err error) string {
	var pe *pcap.PermissionError
	switch {
	case errors.Is(err, pcapbpf.ErrUnsupported):
		return fmt.Sprintf("%v\n  compile it with tcpdump and load the program: tcpdump -ddd 'EXPRESSION' > filter.bpf; %s -F filter.bpf ...", err, cmd)
	case errors.As(err, &pe):
		exe, xerr := os.Executable()
		if xerr != nil {
			exe = cmd
		}
		return fmt.Sprintf("%v\n  run %s as root, or give the binary the capability: sudo setcap cap_net_raw,cap_net_admin=eip %s", err, cmd, exe)
	case errors.Is(err, pcap.ErrNoSuchInterface):
		return fmt.Sprintf("%v (%s -D lists the interfaces)", err, cmd)
	}
	return err.Error()
}

// listInterfaces is -D, in tcpdump's words.
func listInterfaces(w io.Writer) error {
	ifs, err := pcap.Interfaces()
	if err != nil {
		return err
	}
	for i, it := range ifs {
		note := ""
		if it.LinkType == 0 {
			note = " (link type not supported)"
		}
		if it.Name == pcap.AnyInterface && it.Index == 0 {
			note = " (Pseudo-device that captures on all interfaces)" + note
			fmt.Fprintf(w, "%d.%s%s %s\n", i+1, it.Name, note, it.Description())
			continue
		}
		fmt.Fprintf(w, "%d.%s %s%s\n", i+1, it.Name, it.Description(), note)
	}
	return nil
}

// LinkTypeName is a link type as tcpdump names it in "listening on".
func LinkTypeName(lt layers.LinkType) string {
	switch lt {
	case layers.LinkTypeEthernet:
		return "EN10MB (Ethernet)"
	case layers.LinkTypeRaw:
		return "RAW (Raw IP)"
	case layers.LinkTypeLinuxSLL:
		return "LINUX_SLL (Linux cooked v1)"
	}
	return lt.String()
}
