//go:build race

package fdconn

const raceOn = true
