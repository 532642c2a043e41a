package main

import (
	"context"
	"fmt"
	"net"
	"sync"
)

// network is where the partners' HTTP servers listen and where the hub
// dials them: loopback TCP for the real run, in-memory pipes for the tests
// (which run in a testing/synctest bubble, where real sockets cannot be
// used).
type network interface {
	// listen returns a new listener on an address of its own.
	listen() (net.Listener, error)
	// dial connects to the listener at addr (http.Transport.DialContext).
	dial(ctx context.Context, network, addr string) (net.Conn, error)
}

// loopback listens on 127.0.0.1 only: the demo never leaves the machine.
type loopback struct{}

func (loopback) listen() (net.Listener, error) { return net.Listen("tcp", "127.0.0.1:0") }

func (loopback) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	var d net.Dialer
	return d.DialContext(ctx, network, addr)
}

// pipes is an in-memory network: each dial is one net.Pipe, whose other end
// the listener accepts. It is safe for concurrent use.
type pipes struct {
	mu        sync.Mutex
	listeners map[string]*pipeListener
}

func newPipes() *pipes { return &pipes{listeners: map[string]*pipeListener{}} }

func (p *pipes) listen() (net.Listener, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	l := &pipeListener{
		net:    p,
		addr:   pipeAddr(fmt.Sprintf("partner-%d.pipe:80", len(p.listeners)+1)),
		conns:  make(chan net.Conn),
		closed: make(chan struct{}),
	}
	p.listeners[string(l.addr)] = l
	return l, nil
}

func (p *pipes) dial(ctx context.Context, _, addr string) (net.Conn, error) {
	p.mu.Lock()
	l := p.listeners[addr]
	p.mu.Unlock()
	if l == nil {
		return nil, fmt.Errorf("pipes: dial %s: no such listener", addr)
	}
	client, server := net.Pipe()
	select {
	case l.conns <- server:
		return client, nil
	case <-l.closed:
	case <-ctx.Done():
	}
	client.Close()
	server.Close()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return nil, fmt.Errorf("pipes: dial %s: %w", addr, net.ErrClosed)
}

type pipeListener struct {
	net       *pipes
	addr      pipeAddr
	conns     chan net.Conn
	closed    chan struct{}
	closeOnce sync.Once
}

func (l *pipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.closed:
		return nil, net.ErrClosed
	}
}

func (l *pipeListener) Close() error {
	l.closeOnce.Do(func() { close(l.closed) })
	return nil
}

func (l *pipeListener) Addr() net.Addr { return l.addr }

type pipeAddr string

func (a pipeAddr) Network() string { return "pipe" }
func (a pipeAddr) String() string  { return string(a) }
