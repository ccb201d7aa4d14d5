// vprobe prints its own version line, for version's test.
package main

import (
	"fmt"

	"github.com/iwkit/iwkit/internal/version"
)

func main() { fmt.Println(version.Read().Line("vprobe")) }
