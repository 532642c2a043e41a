package rxtest

import (
	"context"
	"sync/atomic"

	"github.com/reactivex/rxgo/v2"
)

// Probe is a cold source that counts its observations (Observed), emits
// Items in order (an error value as an error item) and then, if Hold is
// set, stays open until its context ends. A Probe with no Items closes
// empty (or holds). Opts are the rxgo options the source is built with
// (rxgo.Defer's).
type Probe struct {
	Observed atomic.Int32
	Items    []any
	Hold     bool
	Opts     []rxgo.Option
}

// Observable returns the probe as an Observable; each Observe runs it afresh.
func (p *Probe) Observable() rxgo.Observable {
	return rxgo.Defer([]rxgo.Producer{func(ctx context.Context, next chan<- rxgo.Item) {
		p.Observed.Add(1)
		for _, v := range p.Items {
			it := rxgo.Of(v)
			if err, ok := v.(error); ok {
				it = rxgo.Error(err)
			}
			if !it.SendContext(ctx, next) {
				return
			}
		}
		if p.Hold {
			<-ctx.Done()
		}
	}}, p.Opts...)
}

// Single returns the probe as a Single (see ColdSingle).
func (p *Probe) Single() rxgo.Single { return ColdSingle(p.Observable()) }

// OptionalSingle returns the probe as an OptionalSingle (see
// ColdOptionalSingle).
func (p *Probe) OptionalSingle() rxgo.OptionalSingle { return ColdOptionalSingle(p.Observable()) }

// ColdSingle returns an rxgo.Single whose every Observe observes obs afresh.
// Only Observe is implemented (it is all the operators call); the other
// methods panic.
func ColdSingle(obs rxgo.Observable) rxgo.Single { return coldSingle{cold{obs}} }

// ColdOptionalSingle is ColdSingle for an rxgo.OptionalSingle.
func ColdOptionalSingle(obs rxgo.Observable) rxgo.OptionalSingle { return coldOptional{cold{obs}} }

const notUsed = "rxtest: only Observe is implemented: the operators call nothing else"

type cold struct{ obs rxgo.Observable }

func (c cold) Observe(opts ...rxgo.Option) <-chan rxgo.Item { return c.obs.Observe(opts...) }
func (c cold) Get(...rxgo.Option) (rxgo.Item, error)        { panic(notUsed) }
func (c cold) Run(...rxgo.Option) rxgo.Disposed             { panic(notUsed) }

type coldSingle struct{ cold }

func (coldSingle) Filter(rxgo.Predicate, ...rxgo.Option) rxgo.OptionalSingle { panic(notUsed) }
func (coldSingle) Map(rxgo.Func, ...rxgo.Option) rxgo.Single                 { panic(notUsed) }

type coldOptional struct{ cold }

func (coldOptional) Map(rxgo.Func, ...rxgo.Option) rxgo.OptionalSingle { panic(notUsed) }
