package redis

import (
	"context"
	"fmt"
	"log"
	"strings"
	"sync"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// GoRedisLogger is the interface of go-redis's logger (what
// goredis.SetLogger takes).
type GoRedisLogger interface {
	Printf(ctx context.Context, format string, v ...any)
}

// Logger returns a go-redis logger, for goredis.SetLogger (go-redis has
// one logger per process), that routes what go-redis logs about the round
// trips of a Store: while Redis is away go-redis logs "failed to dial" on
// every probe, which the Store already reports once as a StoreDown event.
// A message about a round trip of an open Store that has listeners
// (Store.OnEvent) goes to them as a ClientLog event and not to next: one
// logged with the context of the Store's round trip, or one that names
// the address of the Store's client (go-redis dials on a goroutine of its
// own, with a context of its own, and names the address in the error).
// Every other message goes to next, or to the standard library's log
// package if next is nil.
func Logger(next GoRedisLogger) GoRedisLogger { return routingLogger{next} }

type routingLogger struct{ next GoRedisLogger }

func (l routingLogger) Printf(ctx context.Context, format string, v ...any) {
	msg := fmt.Sprintf(format, v...)
	if s := storeOfLog(ctx, msg); s != nil {
		s.pub.Publish(StoreEvent{Type: ClientLog, Time: time.Now(), Message: msg})
		return
	}
	if l.next != nil {
		l.next.Printf(ctx, format, v...)
		return
	}
	_ = log.Output(2, msg)
}

// stores are the open Stores by the addresses of their clients, for Logger.
var stores sync.Map // *Store -> []string

// clientAddrs returns the addresses a client dials, as go-redis names them.
func clientAddrs(c goredis.UniversalClient) []string {
	switch c := c.(type) {
	case *goredis.Client:
		return []string{c.Options().Addr}
	case *goredis.ClusterClient:
		return c.Options().Addrs
	}
	return nil
}

func storeOfLog(ctx context.Context, msg string) *Store {
	if ctx != nil {
		if s, ok := ctx.Value(storeKey{}).(*Store); ok && s.pub.Active() {
			return s
		}
	}
	var found *Store
	stores.Range(func(k, v any) bool {
		s := k.(*Store)
		if !s.pub.Active() {
			return true
		}
		for _, a := range v.([]string) {
			if a != "" && strings.Contains(msg, a) {
				found = s
				return false
			}
		}
		return true
	})
	return found
}
