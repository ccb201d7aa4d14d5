// Package tui is iwtui, the terminal inspector.
//
// The model, in plain Go: the index of a capture built in the background
// (index.go: one row per PDU and finding, connections, operations, STags),
// the session that opens files or a live interface and re-runs the
// pipeline for display filters (session.go), the frame store and spill
// file frames are read back from (store.go, chunks.go), the list's state:
// filter, follow, marks, search, history (model.go), saving rows as a
// capture (save.go) and the key table that drives both the handlers and
// the help screen (keys.go).
//
// The widgets, tview over tcell v2: the screen and its layout (ui.go), the
// table views and the I/O graph (views.go), the detail of a row, decoded
// again from its frames when it is shown (detail.go, tree.go; ulp.go for
// storage-protocol messages) and the hex pane (hex.go). Views are tested
// on tcell.SimulationScreen.
package tui
