package bulkhead_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/rxbulkhead/bulkhead"
)

// Bad input and live reconfiguration of a Budget.

func TestBudgetConfigErrorsNameTheField(t *testing.T) {
	ok := func() bulkhead.BudgetConfig { return budgetConfig(10, 0, class("a", 0, 0), class("b", 0, 0)) }
	for _, tc := range []struct {
		name  string
		edit  func(*bulkhead.BudgetConfig)
		field string
		rule  string
	}{
		{"size", func(c *bulkhead.BudgetConfig) { c.Size = 0 }, "Size", ">= 1"},
		{"no class", func(c *bulkhead.BudgetConfig) { c.Classes = nil }, "Classes", "at least one"},
		{"empty class name", func(c *bulkhead.BudgetConfig) { c.Classes[1].Name = "" }, "Classes[1].Name", "not be empty"},
		{"duplicate class", func(c *bulkhead.BudgetConfig) { c.Classes[1].Name = "a" }, "Classes[1].Name", "differ"},
		{"negative share", func(c *bulkhead.BudgetConfig) { c.Classes[0].Share = -1 }, "Classes[0].Share", ">= 0"},
		{"negative headroom", func(c *bulkhead.BudgetConfig) { c.Classes[0].Headroom = -1 }, "Classes[0].Headroom", ">= 0"},
		{"negative wait", func(c *bulkhead.BudgetConfig) { c.Classes[1].MaxWaitDuration = -time.Second }, "Classes[1].MaxWaitDuration", ">= 0"},
		{"wait without queue", func(c *bulkhead.BudgetConfig) { c.Classes[0].MaxQueuedCalls = 0 }, "Classes[0].MaxQueuedCalls", "when MaxWaitDuration is positive"},
		{"shares above size", func(c *bulkhead.BudgetConfig) { c.Classes[0].Share, c.Classes[1].Share = 6, 5 }, "Classes", "at most Size"},
		{"unknown default class", func(c *bulkhead.BudgetConfig) { c.DefaultClass = "z" }, "DefaultClass", "one of Classes"},
		{"empty group name", func(c *bulkhead.BudgetConfig) { c.Groups = []bulkhead.GroupConfig{{Nominal: 1}} }, "Groups[0].Name", "not be empty"},
		{"duplicate group", func(c *bulkhead.BudgetConfig) {
			c.Groups = []bulkhead.GroupConfig{{Name: "g", Nominal: 1}, {Name: "g", Nominal: 1}}
		}, "Groups[1].Name", "differ"},
		{"lendable above nominal", func(c *bulkhead.BudgetConfig) {
			c.Groups = []bulkhead.GroupConfig{{Name: "g", Nominal: 1, Lendable: 2}}
		}, "Groups[0].Lendable", "between 0 and Nominal"},
		{"negative borrowing", func(c *bulkhead.BudgetConfig) {
			c.Groups = []bulkhead.GroupConfig{{Name: "g", Nominal: 1, BorrowingLimit: -1}}
		}, "Groups[0].BorrowingLimit", ">= 0"},
		{"group that runs nothing", func(c *bulkhead.BudgetConfig) { c.Groups = []bulkhead.GroupConfig{{Name: "g"}} }, "Groups[0].BorrowingLimit", "run nothing"},
		{"nominal above size", func(c *bulkhead.BudgetConfig) {
			c.Groups = []bulkhead.GroupConfig{{Name: "g", Nominal: 6}, {Name: "h", Nominal: 5}}
		}, "Groups", "nominal shares must add up to at most Size"},
		{"reserves and headroom above size", func(c *bulkhead.BudgetConfig) {
			c.Classes[0].Headroom = 5
			c.Groups = []bulkhead.GroupConfig{{Name: "g", Nominal: 6}}
		}, "Groups", "headroom"},
		{"negative queue", func(c *bulkhead.BudgetConfig) { c.MaxQueuedCalls = -1 }, "MaxQueuedCalls", ">= 0"},
		{"waits without a budget queue", func(c *bulkhead.BudgetConfig) { c.MaxQueuedCalls = 0 }, "MaxQueuedCalls", "when a class waits"},
		{"negative bypass", func(c *bulkhead.BudgetConfig) { c.MaxBypass = -1 }, "MaxBypass", ">= 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := ok()
			tc.edit(&cfg)
			_, err := bulkhead.NewBudget("hub", cfg)
			var ce *bulkhead.ConfigError
			if !errors.As(err, &ce) || !errors.Is(err, bulkhead.ErrInvalidConfig) {
				t.Fatalf("NewBudget: %v, want a *ConfigError", err)
			}
			if ce.Name != "hub" || ce.Field != tc.field || !strings.Contains(ce.Rule, tc.rule) {
				t.Errorf("error %q (field %q), want field %q with a rule mentioning %q", err, ce.Field, tc.field, tc.rule)
			}
		})
	}
	if _, err := bulkhead.NewBudget("", ok()); err == nil || !strings.Contains(err.Error(), "name must not be empty") {
		t.Errorf("NewBudget with an empty name: %v", err)
	}
	if _, err := bulkhead.NewBudget("hub", ok(), bulkhead.WithClock(nil)); err == nil || !strings.Contains(err.Error(), "WithClock") {
		t.Errorf("NewBudget WithClock(nil): %v", err)
	}
	if err := (bulkhead.BudgetConfig{}).Validate(); len(errorsOf(err)) != 2 {
		t.Errorf("the zero BudgetConfig: %v, want 2 errors (Size, Classes)", err)
	}
}

func errorsOf(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	if err == nil {
		return nil
	}
	return []error{err}
}

func TestBudgetJoiningAndLookupsRefuseBadNames(t *testing.T) {
	clk := newClock()
	cfg := budgetConfig(10, 0, class("a", 0, 0))
	cfg.Groups = []bulkhead.GroupConfig{{Name: "gold", Nominal: 2, BorrowingLimit: 0}}
	b := newBudget(t, cfg, clk)
	if _, err := b.Class("z"); err == nil || !strings.Contains(err.Error(), `bulkhead "hub": invalid config: Class must name one of the budget's classes, got z`) {
		t.Errorf("Class(z): %v", err)
	}
	if _, err := b.Partner(nil, bulkhead.PartnerOptions{}); err == nil || !strings.Contains(err.Error(), "nil Bulkhead") {
		t.Errorf("Partner(nil): %v", err)
	}
	if _, err := b.Flow("", bulkhead.PartnerOptions{}); err == nil || !strings.Contains(err.Error(), "name must not be empty") {
		t.Errorf("Flow(empty): %v", err)
	}
	if _, err := b.Flow("x", bulkhead.PartnerOptions{Group: "silver"}); err == nil || !strings.Contains(err.Error(), "PartnerOptions.Group") {
		t.Errorf("unknown group: %v", err)
	}
	if _, err := b.Flow("x", bulkhead.PartnerOptions{Class: "z"}); err == nil || !strings.Contains(err.Error(), "PartnerOptions.Class") {
		t.Errorf("unknown class: %v", err)
	}
	mustFlow(t, b, "x", bulkhead.PartnerOptions{Group: "gold"})
	if _, err := b.Flow("x", bulkhead.PartnerOptions{}); err == nil || !strings.Contains(err.Error(), `joined with first ("gold")`) {
		t.Errorf("joining again in another group: %v", err)
	}
	if _, err := b.Flow("x", bulkhead.PartnerOptions{Group: "gold"}); err != nil {
		t.Errorf("joining again in the same group: %v", err)
	}
	other := newBudget(t, cfg, clk)
	f := mustFlow(t, b, "y", bulkhead.PartnerOptions{})
	expectPanic(t, "weight 0 must be >= 1", func() { f.Call(bulkhead.Class{}, 0) })
	expectPanic(t, `class "a" belongs to budget "hub", not "hub"`, func() { f.Call(mustClass(t, other, "a"), 1) })
	expectPanic(t, `budget "hub": partner "y" released more permits of class "a" than it holds`, func() { f.FinishCall() })
	var noCtx context.Context // nil: the test
	expectPanic(t, "nil context", func() { _ = f.AcquirePermission(noCtx) })
	expectPanic(t, "nil listener", func() { b.OnEvent(nil) })
}

func expectPanic(t *testing.T, want string, f func()) {
	t.Helper()
	defer func() {
		t.Helper()
		r := recover()
		if s, _ := r.(string); !strings.Contains(s, want) {
			t.Errorf("panic %v, want one containing %q", r, want)
		}
	}()
	f()
}

func TestBudgetChangeConfigGrowsAndShrinksLive(t *testing.T) {
	clk := newClock()
	cfg := budgetConfig(2, 0, class("a", 0, 0))
	b := newBudget(t, cfg, clk)
	f := mustFlow(t, b, "f", bulkhead.PartnerOptions{})
	g := newGrantLog(b)
	for _, x := range []string{"c1", "c2", "c3", "c4"} {
		g.ask(x, f.Call(bulkhead.Class{}, 1))
	}
	expectOrder(t, g.order(), "c1", "c2")
	cfg.Size = 4
	if err := b.ChangeConfig(cfg); err != nil {
		t.Fatal(err)
	}
	expectOrder(t, g.order(), "c3", "c4")
	cfg.Size = 1
	if err := b.ChangeConfig(cfg); err != nil {
		t.Fatal(err)
	}
	g.ask("c5", f.Call(bulkhead.Class{}, 1))
	if m := b.Metrics(); m.InUse != 4 || m.Free != 0 || m.Queued != 1 {
		t.Fatalf("after shrinking to 1 with 4 in use: %+v", m)
	}
	for _, x := range []string{"c1", "c2", "c3"} {
		g.finish(x)
		if got := g.order(); len(got) != 0 {
			t.Fatalf("%v granted while 3 or more of 1 are in use", got)
		}
	}
	g.finish("c4")
	expectOrder(t, g.order(), "c5")
	g.finish("c5")
}

func TestBudgetChangeConfigKeepsEveryClassAndTheOldConfigOnError(t *testing.T) {
	clk := newClock()
	cfg := budgetConfig(2, 0, class("a", 0, 0), class("b", 0, 0))
	b := newBudget(t, cfg, clk)
	drop := budgetConfig(2, 0, class("a", 0, 0))
	err := b.ChangeConfig(drop)
	if !errors.Is(err, bulkhead.ErrInvalidConfig) || !strings.Contains(err.Error(), "Classes must keep every class of the live budget") || !strings.Contains(err.Error(), "got b") {
		t.Fatalf("dropping class b: %v", err)
	}
	if err := b.ChangeConfig(budgetConfig(0, 0, class("a", 0, 0), class("b", 0, 0))); !errors.Is(err, bulkhead.ErrInvalidConfig) {
		t.Fatalf("Size 0: %v", err)
	}
	if got := b.Config(); got.Size != 2 || len(got.Classes) != 2 {
		t.Fatalf("config after refused changes: %+v", got)
	}
	// Reordering and adding classes is fine, and the caller's slices are
	// not kept.
	re := budgetConfig(2, 0, class("b", 0, 0), class("new", 0, 0), class("a", 0, 0))
	if err := b.ChangeConfig(re); err != nil {
		t.Fatal(err)
	}
	re.Classes[0].Name = "changed"
	if m := b.Metrics(); m.Classes[0].Name != "b" || m.Classes[1].Name != "new" || m.Classes[2].Name != "a" {
		t.Fatalf("classes after reordering: %+v", m.Classes)
	}
}

func TestBudgetGroupDroppedByChangeConfigLeavesItsPartnersWithoutShare(t *testing.T) {
	clk := newClock()
	cfg := budgetConfig(4, 0, class("a", 0, 0))
	cfg.Groups = []bulkhead.GroupConfig{{Name: "gold", Nominal: 2, Lendable: 0, BorrowingLimit: 0}}
	b := newBudget(t, cfg, clk)
	gold := mustFlow(t, b, "gp", bulkhead.PartnerOptions{Group: "gold"})
	x := mustFlow(t, b, "x", bulkhead.PartnerOptions{})
	g := newGrantLog(b)
	g.ask("x1", x.Call(bulkhead.Class{}, 2))
	g.ask("x2", x.Call(bulkhead.Class{}, 1)) // waits: 2 are reserved for gold
	expectOrder(t, g.order(), "x1")
	cfg.Groups = nil
	if err := b.ChangeConfig(cfg); err != nil {
		t.Fatal(err)
	}
	expectOrder(t, g.order(), "x2")
	g.ask("g1", gold.Call(bulkhead.Class{}, 1)) // no share, no limit: an ordinary partner
	expectOrder(t, g.order(), "g1")
	if _, err := b.Flow("new", bulkhead.PartnerOptions{Group: "gold"}); err == nil {
		t.Error("joining a dropped group succeeded")
	}
	g.finishAll(t, "x1", "x2", "g1")
}
