package testkit

import (
	"fmt"
	"strings"
	"testing/synctest"
)

// leakedAfterSettling is the verdict of a leak check run when a test ends:
// leaked reports whether the check fails now. Outside a testing/synctest
// bubble that is the verdict. Inside one, the test function may have
// returned while a goroutine of the bubble was still running toward giving
// its permit back (a delivery, the end of an observation): a failing check
// is read again once every other goroutine of the bubble is durably blocked
// (synctest.Wait), and that second reading is the verdict. A passing check
// is never waited for, so a check that passes today cannot hang on a
// goroutine blocked on something that is not durable (network I/O) whose
// release a later cleanup holds.
func leakedAfterSettling(leaked func() bool) bool {
	if !leaked() {
		return false
	}
	if !waitForBubble() {
		return true
	}
	return leaked()
}

// waitForBubble runs synctest.Wait and reports true if the calling
// goroutine is in a bubble; outside one it does nothing and reports false.
// The runtime tells the two apart only by panicking ("goroutine is not in a
// bubble"); any other panic goes on.
func waitForBubble() (inBubble bool) {
	defer func() {
		if r := recover(); r != nil {
			if !strings.Contains(fmt.Sprint(r), "not in a bubble") {
				panic(r)
			}
		}
	}()
	synctest.Wait()
	return true
}
