package main

import (
	"errors"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// partnerServer is one partner's AS2 endpoint: an HTTP server that reads
// the document and answers after a latency drawn from the partner's model,
// times its slow-down factor.
type partnerServer struct {
	p      *partner
	srv    *http.Server
	url    string
	factor atomic.Uint64 // math.Float64bits of the slow-down factor; 0 means 1

	mu  sync.Mutex // guards rng
	rng *rand.Rand

	// hold, when set, keeps every request until it is closed or the
	// request's context ends (the pending-cost probe).
	hold    atomic.Pointer[chan struct{}]
	arrived chan struct{} // one value per held request that arrived
}

// startPartners starts one server per partner on nw.
func startPartners(nw network, ps []*partner, seed uint64) ([]*partnerServer, error) {
	var servers []*partnerServer
	for i, p := range ps {
		l, err := nw.listen()
		if err != nil {
			stopPartners(servers)
			return nil, err
		}
		s := &partnerServer{p: p, url: "http://" + l.Addr().String() + "/as2",
			rng: rand.New(rand.NewPCG(seed, uint64(i))), arrived: make(chan struct{}, 64)}
		s.srv = &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}
		go s.srv.Serve(l)
		servers = append(servers, s)
	}
	return servers, nil
}

func stopPartners(servers []*partnerServer) {
	for _, s := range servers {
		s.srv.Close()
	}
}

// slowBy sets the factor by which the partner's latency is multiplied.
func (s *partnerServer) slowBy(f float64) { s.factor.Store(floatBits(f)) }

func (s *partnerServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if _, err := io.Copy(io.Discard, r.Body); err != nil {
		return
	}
	if h := s.hold.Load(); h != nil {
		s.arrived <- struct{}{}
		select {
		case <-*h:
		case <-r.Context().Done():
		}
		return
	}
	s.mu.Lock()
	lat := s.p.latency(s.rng, floatFrom(s.factor.Load()))
	s.mu.Unlock()
	t := time.NewTimer(lat)
	defer t.Stop()
	select {
	case <-t.C:
		w.Header().Set("Content-Type", "message/disposition-notification")
		io.WriteString(w, "processed\n") // the MDN
	case <-r.Context().Done(): // the hub gave up
	}
}

// holdRequests makes the server keep every request until the returned func
// is called.
func (s *partnerServer) holdRequests() (release func()) {
	for len(s.arrived) > 0 { // arrivals of an earlier hold
		<-s.arrived
	}
	ch := make(chan struct{})
	s.hold.Store(&ch)
	return func() {
		s.hold.Store(nil)
		close(ch)
	}
}

// awaitHeld waits for n held requests to arrive, or fails after timeout.
func (s *partnerServer) awaitHeld(n int, timeout time.Duration) error {
	t := time.NewTimer(timeout)
	defer t.Stop()
	for range n {
		select {
		case <-s.arrived:
		case <-t.C:
			return errors.New("partner " + s.p.name + ": held requests did not arrive")
		}
	}
	return nil
}

func floatBits(f float64) uint64 { return math.Float64bits(f) }

func floatFrom(b uint64) float64 {
	if b == 0 {
		return 1
	}
	return math.Float64frombits(b)
}
