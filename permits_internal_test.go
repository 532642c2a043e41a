package bulkhead

import (
	"slices"
	"sync"
	"testing"
	"time"
)

// With nobody waiting, taking and giving back a permit is a CAS on the
// permit word and takes no lock: here mu is held by the test all along
// (as a Metrics call or a grant would hold it), and the fast paths still
// complete. They used to lock mu.
func TestTheFastPathsTakeNoLockWhileNobodyWaits(t *testing.T) {
	s, err := New("fast", Config{MaxConcurrentCalls: 2})
	if err != nil {
		t.Fatal(err)
	}
	if msg := fastPathsWhileLocked(t, s, "the fast paths waited for the Semaphore's lock"); msg != "" {
		t.Fatal(msg)
	}
	if m := s.Metrics(); m.InFlightCalls != 0 || m.AvailableConcurrentCalls != 2 {
		t.Fatalf("after two takes and two gives: %+v", m)
	}
}

// markWaitingLocked decides a call that found no free permit against a
// give that raced it without the lock: if a permit came back it takes it
// (and sets nothing), otherwise it sets waitingBit, after which nothing
// but the lock's holder moves the word.
func TestMarkWaitingTakesAPermitThatCameBackOrSetsTheWaitingBit(t *testing.T) {
	s, err := New("mark", Config{MaxConcurrentCalls: 1, MaxWaitDuration: time.Hour, MaxQueuedCalls: Unbounded})
	if err != nil {
		t.Fatal(err)
	}
	s.lock()
	defer s.unlock()
	if !s.markWaitingLocked() {
		t.Fatal("a free permit was not taken")
	}
	if v := s.state.Load(); heldOf(v) != 1 || freeOf(v) != 0 || v&waitingBit != 0 {
		t.Fatalf("after taking the free permit: held %d, free %d, waiting %v", heldOf(v), freeOf(v), v&waitingBit != 0)
	}
	if s.markWaitingLocked() {
		t.Fatal("took a permit with none free")
	}
	if v := s.state.Load(); v&waitingBit == 0 {
		t.Fatal("waitingBit not set")
	}
	if s.tryTake() || s.tryGive() {
		t.Fatal("a fast path moved the word while waitingBit was set")
	}
	s.clearWaitingLocked()
	if !s.tryGive() {
		t.Fatal("the held permit could not be given back once nobody waits")
	}
}

// Two calls that give back the one permit held race through the word's
// CAS: exactly one gives it back, the other panics naming the bulkhead,
// and the count stays right, every time.
func TestConcurrentOverReleaseExactlyOnePanics(t *testing.T) {
	s, err := New("over", Config{MaxConcurrentCalls: 1})
	if err != nil {
		t.Fatal(err)
	}
	for range 2000 {
		if !s.TryAcquirePermission() {
			t.Fatal("permit not free")
		}
		var panics sync.WaitGroup
		var mu sync.Mutex
		n := 0
		start := make(chan struct{})
		for range 2 {
			panics.Go(func() {
				defer func() {
					if p := recover(); p != nil {
						if p != `bulkhead "over": released more permits than were acquired` {
							t.Errorf("panic %v", p)
						}
						mu.Lock()
						n++
						mu.Unlock()
					}
				}()
				<-start
				s.FinishCall()
			})
		}
		close(start)
		panics.Wait()
		if n != 1 {
			t.Fatalf("%d of two releases of one permit panicked", n)
		}
		if m := s.Metrics(); m.InFlightCalls != 0 || m.AvailableConcurrentCalls != 1 {
			t.Fatalf("after one release and one over-release: %+v", m)
		}
	}
}

// A limit above what the word counts (wordPermits) still reports the
// configured limit and the exact count held.
func TestALimitAboveTheWordsRangeKeepsMetricsExact(t *testing.T) {
	s, err := New("huge", Config{MaxConcurrentCalls: Unbounded})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if !s.TryAcquirePermission() {
			t.Fatal("permit not free")
		}
	}
	m := s.Metrics()
	if m.MaxAllowedConcurrentCalls != Unbounded || m.InFlightCalls != 3 || m.AvailableConcurrentCalls != Unbounded-3 {
		t.Fatalf("Metrics() = %+v", m)
	}
	if err := s.ChangeConfig(Config{MaxConcurrentCalls: 2}); err != nil {
		t.Fatal(err)
	}
	if s.TryAcquirePermission() {
		t.Fatal("a permit was free with 3 held and a limit of 2")
	}
	for range 3 {
		s.FinishCall()
	}
	if m := s.Metrics(); m.InFlightCalls != 0 || m.AvailableConcurrentCalls != 2 {
		t.Fatalf("Metrics() = %+v", m)
	}
}

// A give-back that finds a call waiting hands its permit straight to it:
// held and free stay as they are (the word is not written but for
// waitingBit, cleared once the queue is empty), the waiters are granted in
// queue order, and Metrics stays exact throughout.
func TestAGiveBackToAWaiterHandsThePermitOnAndKeepsTheCounts(t *testing.T) {
	s, err := New("handoff", Config{MaxConcurrentCalls: 1, MaxWaitDuration: time.Hour, MaxQueuedCalls: Unbounded})
	if err != nil {
		t.Fatal(err)
	}
	if !s.TryAcquirePermission() {
		t.Fatal("permit not free")
	}
	first, second := s.AcquirePermissionAsync(), s.AcquirePermissionAsync()
	word := func() (held, free int, waiting bool) {
		v := s.state.Load()
		return heldOf(v), freeOf(v), v&waitingBit != 0
	}
	if held, free, waiting := word(); held != 1 || free != 0 || !waiting {
		t.Fatalf("with two calls queued: held %d, free %d, waiting %v", held, free, waiting)
	}
	s.FinishCall()
	if first.Err() != nil || second.Err() != ErrPending {
		t.Fatalf("after one give-back: first %v, second %v; want granted, pending", first.Err(), second.Err())
	}
	if held, free, waiting := word(); held != 1 || free != 0 || !waiting {
		t.Fatalf("with one call still queued: held %d, free %d, waiting %v", held, free, waiting)
	}
	s.FinishCall()
	if second.Err() != nil {
		t.Fatalf("after two give-backs: second %v", second.Err())
	}
	if held, free, waiting := word(); held != 1 || free != 0 || waiting {
		t.Fatalf("with the queue empty: held %d, free %d, waiting %v", held, free, waiting)
	}
	if m := s.Metrics(); m.InFlightCalls != 1 || m.AvailableConcurrentCalls != 0 || m.QueuedCalls != 0 {
		t.Fatalf("Metrics() = %+v", m)
	}
	if !s.tryGive() { // nobody waits: the fast path again
		t.Fatal("the last permit could not be given back without the lock")
	}
}

// listenerBit says whether a listener is registered: OnEvent sets it, the
// last remove clears it (calling one remove func twice changes nothing),
// and while it is set the quiet fast paths (takeQuiet, giveQuiet) refuse,
// so that every call goes to a slow path that publishes, while tryTake and
// tryGive, that slow path's first step without the lock, still take and
// give.
func TestTheListenerBitFollowsTheListenersAndStopsOnlyTheQuietPaths(t *testing.T) {
	s, err := New("listening", Config{MaxConcurrentCalls: 2})
	if err != nil {
		t.Fatal(err)
	}
	listening := func() bool { return s.state.Load()&listenerBit != 0 }
	if listening() {
		t.Fatal("listenerBit set with no listener")
	}
	removeA := s.OnEvent(func(Event) {})
	removeB := s.OnEvent(func(Event) {})
	if !listening() {
		t.Fatal("listenerBit clear with two listeners")
	}
	if s.takeQuiet() {
		t.Fatal("takeQuiet took a permit with a listener registered")
	}
	if !s.tryTake() {
		t.Fatal("tryTake found no permit with a listener registered")
	}
	if s.giveQuiet() {
		t.Fatal("giveQuiet gave a permit back with a listener registered")
	}
	if !s.tryGive() {
		t.Fatal("tryGive could not give the permit back with a listener registered")
	}
	removeA()
	removeA()
	if !listening() {
		t.Fatal("listenerBit cleared with one listener left (a remove func called twice)")
	}
	removeB()
	if listening() {
		t.Fatal("listenerBit still set with no listener left")
	}
	if !s.takeQuiet() || !s.giveQuiet() {
		t.Fatal("the quiet fast paths refused once the last listener was removed")
	}
	if v := s.state.Load(); v != wordFor(2) {
		t.Fatalf("word %#x after all, want %#x", v, wordFor(2))
	}
}

// With a listener registered the four fast paths go to their slow paths,
// which publish every event and still take no lock while nobody waits
// (mu is held by the test all along); once the listener is removed, they
// publish nothing again.
func TestWithAListenerTheFastPathsPublishAndStillTakeNoLock(t *testing.T) {
	s, err := New("loud", Config{MaxConcurrentCalls: 2})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var got []EventType
	remove := s.OnEvent(func(e Event) {
		mu.Lock()
		got = append(got, e.Type)
		mu.Unlock()
	})
	events := func() []EventType {
		mu.Lock()
		defer mu.Unlock()
		return append([]EventType(nil), got...)
	}
	if msg := fastPathsWhileLocked(t, s, "with a listener, the fast paths waited for the Semaphore's lock"); msg != "" {
		t.Fatal(msg)
	}
	want := []EventType{CallPermitted, CallPermitted, CallFinished} // ReleasePermission publishes nothing
	if e := events(); !slices.Equal(e, want) {
		t.Fatalf("events %v, want %v", e, want)
	}
	remove()
	if msg := fastPathCalls(s); msg != "" {
		t.Fatal(msg)
	}
	if e := events(); !slices.Equal(e, want) {
		t.Fatalf("events %v after the listener was removed, want %v still", e, want)
	}
	if m := s.Metrics(); m.InFlightCalls != 0 || m.AvailableConcurrentCalls != 2 {
		t.Fatalf("after four takes and four gives: %+v", m)
	}
}

// fastPathCalls takes and gives back two permits of s through the four
// fast paths (TryAcquirePermission, AcquirePermissionAsync granted at once,
// FinishCall, ReleasePermission) and returns what went wrong, "" if
// nothing did.
func fastPathCalls(s *Semaphore) string {
	switch {
	case !s.TryAcquirePermission():
		return "TryAcquirePermission found no permit"
	case s.AcquirePermissionAsync() != grantedAcquisition:
		return "AcquirePermissionAsync was not granted at once"
	}
	s.FinishCall()
	s.ReleasePermission()
	return ""
}

// fastPathsWhileLocked runs fastPathCalls on another goroutine while the
// test holds s's lock, and returns its result once it has returned; it
// fails the test with stuck if they have not returned after 10 s (they
// wait for the lock).
func fastPathsWhileLocked(t *testing.T, s *Semaphore, stuck string) string {
	t.Helper()
	s.lock()
	done := make(chan string, 1)
	go func() { done <- fastPathCalls(s) }()
	select {
	case msg := <-done:
		s.unlock()
		return msg
	case <-time.After(10 * time.Second):
		t.Fatal(stuck)
		return ""
	}
}

// takeQuiet and giveQuiet test free and held on the whole word (one
// compare each): for free counts around zero and at the word's ends, held
// counts zero and not, and each flag, they take or give exactly when
// freeOf and heldOf say a permit is free or held and no flag is set, and
// leave the word alone otherwise.
func TestTheQuietPathsDecideAsFreeOfAndHeldOfSay(t *testing.T) {
	var s Semaphore
	for _, free := range []int32{-1 << 31, -(1 << 30), -2, -1, 0, 1, 2, 1<<30 - 1, 1<<31 - 1} {
		for _, held := range []uint64{0, 1, 2, wordPermits} {
			for _, flags := range []uint64{0, waitingBit, listenerBit, waitingBit | listenerBit} {
				v := uint64(uint32(free))<<freeShift | held<<heldShift | flags
				s.state.Store(v)
				took := s.takeQuiet()
				if want := flags == 0 && freeOf(v) > 0; took != want {
					t.Errorf("free %d, held %d, flags %b: takeQuiet %v, want %v", free, held, flags, took, want)
				}
				if after := s.state.Load(); took && after != v+takeDelta || !took && after != v {
					t.Errorf("free %d, held %d, flags %b: word %#x after takeQuiet %v", free, held, flags, after, took)
				}
				s.state.Store(v)
				gave := s.giveQuiet()
				if want := flags == 0 && heldOf(v) > 0; gave != want {
					t.Errorf("free %d, held %d, flags %b: giveQuiet %v, want %v", free, held, flags, gave, want)
				}
				if after := s.state.Load(); gave && after != v-takeDelta || !gave && after != v {
					t.Errorf("free %d, held %d, flags %b: word %#x after giveQuiet %v", free, held, flags, after, gave)
				}
			}
		}
	}
}
