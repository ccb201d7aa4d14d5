//go:build race

package render

// raceEnabled: the race detector's instrumentation changes what escapes,
// so allocation counts are not compared under it.
const raceEnabled = true
