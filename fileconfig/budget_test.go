package fileconfig_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/fileconfig"
	"github.com/rxbulkhead/bulkhead/testkit"
)

// hubJSON is the budgets section of the guide's hub, in JSON.
const hubJSON = `{"budgets": {"hub": {
	"size": 1000, "max-queued-calls": "unbounded", "MaxBypass": 100, "defaultClass": "batch",
	"classes": [
		{"name": "interactive", "headroom": 20, "maxWaitDuration": "1s", "maxQueuedCalls": "unbounded"},
		{"name": "batch", "share": 50, "maxWaitDuration": "1m", "maxQueuedCalls": 5000}
	],
	"groups": [{"name": "gold", "nominal": 300, "lendable": 200, "borrowing_limit": "unbounded"}]
}}}`

func decodeFile(t *testing.T, doc string) fileconfig.File {
	t.Helper()
	var f fileconfig.File
	if err := json.Unmarshal([]byte(doc), &f); err != nil {
		t.Fatal(err)
	}
	return f
}

func TestBudgetsSectionResolvesToTheBudgetConfig(t *testing.T) {
	res, err := decodeFile(t, hubJSON).Resolve()
	if err != nil {
		t.Fatal(err)
	}
	want := bulkhead.BudgetConfig{
		Size: 1000, MaxQueuedCalls: bulkhead.Unbounded, MaxBypass: 100, DefaultClass: "batch",
		Classes: []bulkhead.ClassConfig{
			{Name: "interactive", Headroom: 20, MaxWaitDuration: time.Second, MaxQueuedCalls: bulkhead.Unbounded},
			{Name: "batch", Share: 50, MaxWaitDuration: time.Minute, MaxQueuedCalls: 5000},
		},
		Groups: []bulkhead.GroupConfig{{Name: "gold", Nominal: 300, Lendable: 200, BorrowingLimit: bulkhead.Unbounded}},
	}
	if got := res.Budgets["hub"]; !reflect.DeepEqual(got, want) {
		t.Errorf("resolved\n%+v\nwant\n%+v", got, want)
	}
	if len(res.Budgets) != 1 {
		t.Errorf("%d budgets resolved, want 1", len(res.Budgets))
	}
}

func TestBadBudgetValuesNameTheBudgetTheKeyAndTheValue(t *testing.T) {
	budget := func(body string) string { return `{"budgets": {"hub": ` + body + `}}` }
	oneClass := `"classes": [{"name": "normal"}]`
	for _, tc := range []struct{ name, doc, want string }{
		{"size zero", budget(`{"size": 0, ` + oneClass + `}`),
			`bulkhead budget "hub": size 0: must be >= 1`},
		{"size missing", budget(`{` + oneClass + `}`),
			`bulkhead budget "hub": size 0: must be >= 1`},
		{"no class", budget(`{"size": 10}`),
			`bulkhead budget "hub": classes 0: must list at least one class`},
		{"classes not a list", budget(`{"size": 10, "classes": {"normal": {}}}`),
			`bulkhead budget "hub": classes: want a list of classes (a mapping each), got a mapping`},
		{"class not a mapping", budget(`{"size": 10, "classes": ["normal"]}`),
			`bulkhead budget "hub": classes[0]: want a mapping of settings, got a string`},
		{"class null", budget(`{"size": 10, "classes": [null]}`),
			`bulkhead budget "hub": classes[0]: want a mapping of settings, got null`},
		{"unknown class key", budget(`{"size": 10, "classes": [{"name": "normal", "priority": 1}]}`),
			`bulkhead budget "hub": classes[0].priority: unknown key (known: headroom, maxQueuedCalls, maxWaitDuration, name, share)`},
		{"negative share", budget(`{"size": 10, "classes": [{"name": "a"}, {"name": "b", "share": -1}]}`),
			`bulkhead budget "hub": classes[1].share -1: must be >= 0`},
		{"shares above size", budget(`{"size": 10, "classes": [{"name": "a", "share": 6}, {"name": "b", "share": 6}]}`),
			`bulkhead budget "hub": classes 12: shares must add up to at most Size (10)`},
		{"class name twice", budget(`{"size": 10, "classes": [{"name": "a"}, {"name": "a"}]}`),
			`bulkhead budget "hub": classes[1].name "a": must differ from the other classes' names`},
		{"class without name", budget(`{"size": 10, "classes": [{"share": 1}]}`),
			`bulkhead budget "hub": classes[0].name "": must not be empty`},
		{"class name not a string", budget(`{"size": 10, "classes": [{"name": 7}]}`),
			`bulkhead budget "hub": classes[0].name 7: want a name, got a number`},
		{"class wait without unit", budget(`{"size": 10, "maxQueuedCalls": 5, "classes": [{"name": "a", "maxWaitDuration": 5, "maxQueuedCalls": 5}]}`),
			`bulkhead budget "hub": classes[0].maxWaitDuration 5: not a duration: want a number with a unit, such as "50ms" or "0s"`},
		{"class wait without queue", budget(`{"size": 10, "maxQueuedCalls": 5, "classes": [{"name": "a", "maxWaitDuration": "1s"}]}`),
			`bulkhead budget "hub": classes[0].maxQueuedCalls 0: must be >= 1 when MaxWaitDuration is positive (bulkhead.Unbounded for no bound)`},
		{"budget queue missing", budget(`{"size": 10, "classes": [{"name": "a", "maxWaitDuration": "1s", "maxQueuedCalls": 1}]}`),
			`bulkhead budget "hub": maxQueuedCalls 0: must be >= 1 when a class waits (bulkhead.Unbounded for no bound)`},
		{"unknown default class", budget(`{"size": 10, "defaultClass": "urgent", ` + oneClass + `}`),
			`bulkhead budget "hub": defaultClass "urgent": must name one of Classes (empty: the last class)`},
		{"lendable above nominal", budget(`{"size": 10, ` + oneClass + `, "groups": [{"name": "gold", "nominal": 2, "lendable": 3}]}`),
			`bulkhead budget "hub": groups[0].lendable 3: must be between 0 and Nominal (2)`},
		{"group that can run nothing", budget(`{"size": 10, ` + oneClass + `, "groups": [{"name": "gold"}]}`),
			`bulkhead budget "hub": groups[0].borrowingLimit 0: must be >= 1 when Nominal is 0, or the group can run nothing (bulkhead.Unbounded for no limit)`},
		{"groups not a list", budget(`{"size": 10, ` + oneClass + `, "groups": "gold"}`),
			`bulkhead budget "hub": groups: want a list of groups (a mapping each), got a string`},
		{"unknown group key", budget(`{"size": 10, ` + oneClass + `, "groups": [{"name": "gold", "nominal": 1, "weight": 2}]}`),
			`bulkhead budget "hub": groups[0].weight: unknown key (known: borrowingLimit, lendable, name, nominal)`},
		{"negative bypass", budget(`{"size": 10, "maxBypass": -1, ` + oneClass + `}`),
			`bulkhead budget "hub": maxBypass -1: must be >= 0`},
		{"size not a number", budget(`{"size": "big", ` + oneClass + `}`),
			`bulkhead budget "hub": size "big": want an integer or "unbounded", got a string`},
		{"unknown budget key", budget(`{"size": 10, "limit": 3, ` + oneClass + `}`),
			`bulkhead budget "hub": limit: unknown key (known: classes, defaultClass, groups, maxBypass, maxQueuedCalls, size)`},
		{"budget key twice", budget(`{"size": 10, "Size": 11, ` + oneClass + `}`),
			`bulkhead budget "hub": size: given twice (also as "Size")`},
		{"JSON key twice in a class", budget(`{"size": 10, "classes": [{"name": "a", "name": "b"}]}`),
			`bulkhead budget "hub": classes[0].name: given twice`},
		{"budget not a mapping", `{"budgets": {"hub": 1000}}`,
			`bulkhead budget "hub": want a mapping of settings, got a number`},
		{"section not a mapping", `{"budgets": ["hub"]}`,
			`bulkhead config: budgets: want a mapping from budget names to settings, got a list`},
		{"empty name", `{"budgets": {"": {"size": 1, ` + oneClass + `}}}`,
			`bulkhead budget "": the name must not be empty`},
		{"null budget", `{"budgets": {"hub": null}}`,
			`bulkhead budget "hub": classes 0: must list at least one class`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var f fileconfig.File
			err := json.Unmarshal([]byte(tc.doc), &f)
			errs := fileErrors(t, err)
			if got := errs[0].Error(); got != tc.want {
				t.Fatalf("error:\n got %s\nwant %s\n(all: %v)", got, tc.want, err)
			}
			if errs[0].Kind != "budget" && !strings.HasPrefix(tc.name, "section") {
				t.Errorf("Kind %q, want budget", errs[0].Kind)
			}
			if !errors.Is(err, bulkhead.ErrInvalidConfig) {
				t.Errorf("%v does not match ErrInvalidConfig", err)
			}
		})
	}
}

func TestABudgetFileReportsEveryProblemInFileOrder(t *testing.T) {
	doc := `{"instances": {"walmart": {"maxConcurrentCalls": 0}},
		"budgets": {"zeta": {"size": 0, "classes": [{"name": "a"}]}, "alpha": {"size": 5, "classes": [{"name": "a", "share": -2}], "maxBypass": -1}}}`
	var f fileconfig.File
	errs := fileErrors(t, json.Unmarshal([]byte(doc), &f))
	var got []string
	for _, e := range errs {
		got = append(got, e.Error())
	}
	want := []string{
		`bulkhead "walmart": maxConcurrentCalls 0: must be >= 1`,
		`bulkhead budget "alpha": classes[0].share -2: must be >= 0`,
		`bulkhead budget "alpha": maxBypass -1: must be >= 0`,
		`bulkhead budget "zeta": size 0: must be >= 1`,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("errors\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestNewBudgetsBuildsEveryBudgetOfTheFile(t *testing.T) {
	f := decodeFile(t, `{"budgets": {
		"hub": {"size": 3, "classes": [{"name": "normal"}]},
		"edge": {"size": 7, "classes": [{"name": "a"}, {"name": "b"}], "groups": [{"name": "g", "nominal": 2, "lendable": 1}]}}}`)
	clock := testkit.NewVirtualClock(time.Unix(0, 0))
	bs, err := fileconfig.NewBudgets(f, bulkhead.WithClock(clock))
	if err != nil {
		t.Fatal(err)
	}
	if got := bs.Names(); !reflect.DeepEqual(got, []string{"edge", "hub"}) {
		t.Errorf("Names() = %v", got)
	}
	hub, ok := bs.Get("hub")
	if !ok || hub.Name() != "hub" || hub.Config().Size != 3 {
		t.Fatalf("Get(hub) = %v, %v", hub, ok)
	}
	edge, _ := bs.Get("edge")
	if got := bs.All(); len(got) != 2 || got[0] != edge || got[1] != hub {
		t.Errorf("All() = %v, want [edge hub]", got)
	}
	if m := edge.Metrics(); m.Size != 7 || len(m.Classes) != 2 || m.Groups[0].Reserved != 1 {
		t.Errorf("edge metrics %+v", m)
	}
	if _, ok := bs.Get("core"); ok {
		t.Error("Get found a budget the file does not have")
	}
	bad := fileconfig.File{Budgets: map[string]fileconfig.BudgetSpec{"hub": {Size: 0, Classes: []fileconfig.ClassSpec{{Name: "a"}}}}}
	if _, err := fileconfig.NewBudgets(bad); err == nil || err.Error() != `bulkhead budget "hub": size 0: must be >= 1` {
		t.Errorf("NewBudgets of a budget of size 0: %v", err)
	}
	empty, err := fileconfig.NewBudgets(fileconfig.File{})
	if err != nil || len(empty.All()) != 0 {
		t.Errorf("NewBudgets of an empty file = %v, %v", empty.All(), err)
	}
}

func TestNewBudgetsGivesItsOptionsToEveryBudget(t *testing.T) {
	clock := testkit.NewVirtualClock(time.Unix(0, 0))
	bs, err := fileconfig.NewBudgets(decodeFile(t, `{"budgets": {"hub": {"size": 1, "maxQueuedCalls": 1,
		"classes": [{"name": "a", "maxWaitDuration": "1s", "maxQueuedCalls": 1}]}}}`), bulkhead.WithClock(clock))
	if err != nil {
		t.Fatal(err)
	}
	hub, _ := bs.Get("hub")
	testkit.CheckBudget(t, hub)
	p, _ := hub.Flow("walmart", bulkhead.PartnerOptions{})
	p.AcquirePermissionAsync()
	defer p.FinishCall()
	waiter := p.AcquirePermissionAsync()
	clock.Advance(time.Second) // the budget's timer is on the virtual clock
	if !errors.Is(waiter.Err(), bulkhead.ErrBulkheadFull) {
		t.Fatalf("waiter after 1 s of the budget's clock: %v", waiter.Err())
	}
}

func TestBudgetsApplyChangesLiveBudgetsAndAddsNewOnes(t *testing.T) {
	bs, err := fileconfig.NewBudgets(decodeFile(t, `{"budgets": {
		"hub": {"size": 1, "maxQueuedCalls": 10, "classes": [{"name": "interactive", "maxWaitDuration": "1s", "maxQueuedCalls": 10}, {"name": "batch"}]},
		"kept": {"size": 2, "classes": [{"name": "a"}]}}}`))
	if err != nil {
		t.Fatal(err)
	}
	hub, _ := bs.Get("hub")
	kept, _ := bs.Get("kept")
	testkit.CheckBudget(t, hub)
	p, _ := hub.Flow("walmart", bulkhead.PartnerOptions{})
	interactive, _ := hub.Class("interactive")
	p.Call(interactive, 1).AcquirePermissionAsync()
	waiter := p.Call(interactive, 1).AcquirePermissionAsync()
	if waiter.Granted() {
		t.Fatal("second call granted by a budget of 1")
	}

	// Grow the hub, put batch first and add a class; add a budget; leave "kept" out.
	err = bs.Apply(decodeFile(t, `{"budgets": {
		"hub": {"size": 2, "maxQueuedCalls": 10, "classes": [{"name": "batch"}, {"name": "interactive", "maxWaitDuration": "1s", "maxQueuedCalls": 10}, {"name": "sheddable"}]},
		"new": {"size": 5, "classes": [{"name": "a"}]}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if !waiter.Granted() {
		t.Error("the waiter was not granted when the budget grew")
	}
	if got, _ := bs.Get("hub"); got != hub {
		t.Error("Apply replaced the live budget instead of changing it")
	}
	m := hub.Metrics()
	if m.Size != 2 || len(m.Classes) != 3 || m.Classes[0].Name != "batch" {
		t.Errorf("hub after Apply: %+v", m)
	}
	if k, _ := bs.Get("kept"); k != kept || kept.Config().Size != 2 {
		t.Error("a budget the file does not list changed")
	}
	if n, ok := bs.Get("new"); !ok || n.Config().Size != 5 {
		t.Error("the new budget was not created")
	}
	p.Call(interactive, 1).FinishCall()
	p.Call(interactive, 1).FinishCall()
}

func TestBudgetsApplyRefusesToDropAClassAndChangesNothing(t *testing.T) {
	bs, err := fileconfig.NewBudgets(decodeFile(t, `{"budgets": {
		"edge": {"size": 2, "classes": [{"name": "a"}]},
		"hub": {"size": 4, "classes": [{"name": "interactive"}, {"name": "batch"}]}}}`))
	if err != nil {
		t.Fatal(err)
	}
	err = bs.Apply(decodeFile(t, `{"budgets": {
		"edge": {"size": 9, "classes": [{"name": "a"}]},
		"hub": {"size": 8, "classes": [{"name": "interactive"}]},
		"new": {"size": 1, "classes": [{"name": "a"}]}}}`))
	var fe *fileconfig.Error
	want := `bulkhead budget "hub": classes: drops the class "batch" of the live budget: a live budget cannot lose a class (keep it, or restart with the new file)`
	if !errors.As(err, &fe) || err.Error() != want || !errors.Is(err, bulkhead.ErrInvalidConfig) {
		t.Fatalf("Apply = %v, want %s", err, want)
	}
	edge, _ := bs.Get("edge")
	hub, _ := bs.Get("hub")
	if edge.Config().Size != 2 || hub.Config().Size != 4 {
		t.Errorf("a refused Apply changed budgets: edge %d, hub %d", edge.Config().Size, hub.Config().Size)
	}
	if _, ok := bs.Get("new"); ok {
		t.Error("a refused Apply created a budget")
	}
}

func TestBudgetsApplyOfABadFileChangesNothing(t *testing.T) {
	bs, err := fileconfig.NewBudgets(decodeFile(t, `{"budgets": {"hub": {"size": 4, "classes": [{"name": "a"}]}}}`))
	if err != nil {
		t.Fatal(err)
	}
	bad := fileconfig.File{Budgets: map[string]fileconfig.BudgetSpec{"hub": {Size: 8, Classes: []fileconfig.ClassSpec{{Name: "a", Share: 9}}}}}
	err = bs.Apply(bad)
	if err == nil || err.Error() != `bulkhead budget "hub": classes 9: shares must add up to at most Size (8)` {
		t.Fatalf("Apply = %v", err)
	}
	if hub, _ := bs.Get("hub"); hub.Config().Size != 4 {
		t.Error("a refused Apply changed the budget")
	}
}

// A budgets section does not bother the registry functions, which read
// configs and instances only.
func TestNewRegistryIgnoresTheBudgetsSection(t *testing.T) {
	r, err := fileconfig.NewRegistry(decodeFile(t, hubJSON))
	if err != nil {
		t.Fatal(err)
	}
	if n := len(r.All()); n != 0 {
		t.Errorf("%d bulkheads from a file of budgets only", n)
	}
}
