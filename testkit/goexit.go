package testkit

// Goexited is what RunToEnd returns for a function that called
// runtime.Goexit (as t.FailNow does). It equals no value a function can
// panic with.
var Goexited any = goexited{}

type goexited struct{}

func (goexited) String() string { return "runtime.Goexit" }

// RunToEnd runs f on a new goroutine and waits until it has ended, however
// it ends: it returns nil if f returned, the value f panicked with (the panic
// is recovered, as net/http's server recovers a handler's), or Goexited if f
// called runtime.Goexit. Tests of code that runs user callbacks use it to
// check that a permit comes back whichever way the callback leaves.
func RunToEnd(f func()) any {
	done := make(chan any, 1)
	go func() {
		r := Goexited
		defer func() { done <- r }()
		defer func() {
			if p := recover(); p != nil {
				r = p
			}
		}()
		f()
		r = nil
	}()
	return <-done
}
