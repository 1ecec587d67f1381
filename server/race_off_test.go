//go:build !race

package server

// raceEnabled: the race detector is on (its shadow memory makes RSS
// figures meaningless).
const raceEnabled = false
