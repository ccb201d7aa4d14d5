//go:build !cgo

// Command iwsql needs cgo (it embeds DuckDB); this build has none
// (CGO_ENABLED=0, or no C compiler), so it only says so.
package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Fprintln(os.Stderr, "iwsql: built without cgo; it embeds DuckDB, which needs cgo and a C compiler: build it with CGO_ENABLED=1")
	os.Exit(1)
}
