//go:build race

package persistence

const raceEnabled = true
