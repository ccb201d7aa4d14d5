package deps

import _ "github.com/gopacket/gopacket/pcapgo"
