package fileconfig_test

import (
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/fileconfig"
)

// hubBudgets is a budgets section with two classes and two groups.
const hubBudgets = `"budgets": {"hub": {"size": 10,
	"classes": [{"name": "interactive"}, {"name": "batch", "share": 2}],
	"groups": [{"name": "gold", "nominal": 4}, {"name": "silver", "nominal": 2}]}}`

// hubFile is a registry joined to the budget hub: the default config's
// class is interactive, the gold config's group gold (walmart inherits
// it), archive's class batch.
const hubFile = `{"budget": "hub", ` + hubBudgets + `,
	"configs": {"default": {"maxConcurrentCalls": 5, "class": "interactive"}, "gold": {"maxConcurrentCalls": 8, "group": "gold"}},
	"instances": {"walmart": {"baseConfig": "gold"}, "archive": {"class": "batch"}}}`

// hubRegistry builds the budgets and the registry of doc.
func hubRegistry(t *testing.T, doc string) (*fileconfig.Budgets, *bulkhead.Registry) {
	t.Helper()
	f := decodeFile(t, doc)
	bs, err := fileconfig.NewBudgets(f)
	if err != nil {
		t.Fatal(err)
	}
	r, err := bs.NewRegistry(f)
	if err != nil {
		t.Fatal(err)
	}
	return bs, r
}

// usage is where one held call of key shows in the budget: its group
// ("" for none) and its class.
func usage(t *testing.T, r *bulkhead.Registry, key string) (group, class string) {
	t.Helper()
	l, err := r.TryAcquirePermission(key, bulkhead.CallOptions{})
	if err != nil {
		t.Fatalf("%s: %v", key, err)
	}
	defer l.ReleasePermission()
	m := r.Budget().Metrics()
	if m.InUse != 1 {
		t.Fatalf("%s: budget InUse %d, want 1", key, m.InUse)
	}
	for _, g := range m.Groups {
		if g.InUse != 0 {
			group = g.Name
		}
	}
	for _, c := range m.Classes {
		if c.InUse != 0 {
			class = c.Name
		}
	}
	return group, class
}

func TestBudgetKeysJoinEachBulkheadWithItsEntrysGroupAndClass(t *testing.T) {
	bs, r := hubRegistry(t, hubFile)
	hub, _ := bs.Get("hub")
	if r.Budget() != hub {
		t.Fatalf("registry's budget %p, want the Budgets' hub %p", r.Budget(), hub)
	}
	for _, tc := range []struct{ key, group, class string }{
		{"walmart", "gold", "interactive"}, // gold's group, default's class, both inherited
		{"archive", "", "batch"},           // its own class
		{"carrefour", "", "interactive"},   // not an instance: the default config's
	} {
		if g, c := usage(t, r, tc.key); g != tc.group || c != tc.class {
			t.Errorf("%s: joined with group %q class %q, want %q %q", tc.key, g, c, tc.group, tc.class)
		}
	}
	// The instance's own configuration is applied too.
	if s, ok := r.Find("walmart"); !ok || s.Config().MaxConcurrentCalls != 8 {
		t.Fatalf("walmart: %v %v, want a bulkhead of 8", s, ok)
	}
}

func TestAnEmptyGroupOrClassOverridesAnInheritedOne(t *testing.T) {
	doc := `{"budget": "hub", ` + hubBudgets + `,
		"configs": {"default": {"group": "silver", "class": "interactive"}},
		"instances": {"plain": {"group": "", "class": ""}}}`
	_, r := hubRegistry(t, doc)
	if g, c := usage(t, r, "plain"); g != "" || c != "batch" {
		t.Fatalf("plain: group %q class %q, want none and the budget's default class (batch, the last)", g, c)
	}
	if g, c := usage(t, r, "other"); g != "silver" || c != "interactive" {
		t.Fatalf("other: group %q class %q, want the default config's silver, interactive", g, c)
	}
}

func TestBadBudgetKeysNameTheEntryTheKeyAndTheValue(t *testing.T) {
	for _, tc := range []struct{ name, doc, want string }{
		{"unknown budget", `{"budget": "hb", ` + hubBudgets + `}`,
			`bulkhead config: budget "hb": no such budget (known: hub)`},
		{"budget without budgets", `{"budget": "hub"}`,
			`bulkhead config: budget "hub": no such budget (known: none)`},
		{"budget not a string", `{"budget": 3, ` + hubBudgets + `, "instances": {"a": {"group": "gold"}}}`,
			`bulkhead config: budget 3: want the name of one of the file's budgets, got a number`},
		{"unknown group", `{"budget": "hub", ` + hubBudgets + `, "instances": {"a": {"group": "platinum"}}}`,
			`bulkhead "a": group "platinum": no such group of budget "hub" (known: gold, silver)`},
		{"unknown class on a config", `{"budget": "hub", ` + hubBudgets + `, "configs": {"big": {"class": "urgent"}}}`,
			`bulkhead config "big": class "urgent": no such class of budget "hub" (known: interactive, batch)`},
		{"group without budget", hubBudgetsOnly(`"instances": {"a": {"group": "gold"}}`),
			`bulkhead "a": group "gold": needs a budget: name one of the file's budgets with the top-level key budget`},
		{"class without budget", `{"configs": {"default": {"class": "batch"}}}`,
			`bulkhead config "default": class "batch": needs a budget: name one of the file's budgets with the top-level key budget`},
		{"group not a string", `{"budget": "hub", ` + hubBudgets + `, "instances": {"a": {"group": 1}}}`,
			`bulkhead "a": group 1: want the name of a group of the file's budget, got a number`},
		{"class not a string", `{"budget": "hub", ` + hubBudgets + `, "instances": {"a": {"class": ["batch"]}}}`,
			`bulkhead "a": class [batch]: want the name of a class of the file's budget, got a list`},
		{"group given twice", `{"budget": "hub", ` + hubBudgets + `, "instances": {"a": {"group": "gold", "Group": "silver"}}}`,
			`bulkhead "a": group: given twice (also as "Group")`},
		{"budget key twice", `{"budget": "hub", "Budget": "hub", ` + hubBudgets + `}`,
			`bulkhead config: budget: given twice (also as "Budget")`},
		{"budget that did not decode", `{"budget": "hub", "budgets": {"hub": 3}, "instances": {"a": {"group": "gold"}}}`,
			`bulkhead budget "hub": want a mapping of settings, got a number`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := loadJSON(tc.doc)
			requireFileError(t, err)
			if err.Error() != tc.want {
				t.Fatalf("got  %s\nwant %s", err, tc.want)
			}
		})
	}
}

func hubBudgetsOnly(rest string) string { return `{` + hubBudgets + `, ` + rest + `}` }

func TestNewRegistryRefusesAFileWithABudget(t *testing.T) {
	_, err := fileconfig.NewRegistry(decodeFile(t, hubFile))
	requireFileError(t, err, `bulkhead config: budget "hub": a registry whose bulkheads join a budget is built by Budgets.NewRegistry`)
}

func TestBudgetsNewRegistryChecksTheLiveBudget(t *testing.T) {
	// Budgets built from another file: no hub, then a hub without gold.
	other, err := fileconfig.NewBudgets(decodeFile(t, `{"budgets": {"edge": {"size": 1, "classes": [{"name": "x"}]}}}`))
	if err != nil {
		t.Fatal(err)
	}
	_, err = other.NewRegistry(decodeFile(t, hubFile))
	requireFileError(t, err, `bulkhead config: budget "hub": no such budget in these Budgets (known: edge)`)

	bs, err := fileconfig.NewBudgets(decodeFile(t, `{"budgets": {"hub": {"size": 10, "classes": [{"name": "interactive"}, {"name": "batch"}]}}}`))
	if err != nil {
		t.Fatal(err)
	}
	_, err = bs.NewRegistry(decodeFile(t, hubFile))
	requireFileError(t, err, `bulkhead config "gold": group "gold": no such group of the live budget "hub" (known: none)`,
		`bulkhead "walmart": group "gold"`)

	// Without a budget key, it builds a registry without a budget.
	r, err := bs.NewRegistry(decodeFile(t, `{"instances": {"a": {}}}`))
	if err != nil || r.Budget() != nil {
		t.Fatalf("got %v, %v; want a registry without a budget", r, err)
	}
}

func TestApplyKeepsTheRegistrysGroupsAndClassesAndRefusesAFileThatChangesThem(t *testing.T) {
	edit := func(instances string) string {
		return `{"budget": "hub", ` + hubBudgets + `,
			"configs": {"default": {"maxConcurrentCalls": 5, "class": "interactive"}, "gold": {"maxConcurrentCalls": 8, "group": "gold"}},
			"instances": {` + instances + `}}`
	}
	refused := []struct{ name, doc, want string }{
		{"an instance's group", edit(`"walmart": {"maxConcurrentCalls": 9, "group": "silver"}`),
			`bulkhead "walmart": group "silver": the registry was built with the group "gold" here, and keeps it: restart with the new file to change it`},
		{"an inherited class", edit(`"walmart": {"baseConfig": "gold", "maxConcurrentCalls": 9, "class": "batch"}`),
			`bulkhead "walmart": class "batch": the registry was built with the class "interactive" here, and keeps it`},
		{"the default's class", `{"budget": "hub", ` + hubBudgets + `, "configs": {"default": {"maxConcurrentCalls": 9, "class": "batch"}}}`,
			`bulkhead config "default": class "batch": the registry was built with the class "interactive" here`},
		{"a new instance's group", edit(`"kmart": {"maxConcurrentCalls": 9, "group": "gold"}`),
			`bulkhead "kmart": group "gold": the registry was built with the group "" here`},
		{"another budget", `{"budget": "edge", "budgets": {"edge": {"size": 1, "classes": [{"name": "x"}]}}, "instances": {"walmart": {"maxConcurrentCalls": 9}}}`,
			`bulkhead config: budget "edge": the registry's bulkheads joined the budget "hub" when it was built: a registry's budget is fixed (restart with the new file)`},
		{"a dropped group, without the budget key", `{"budgets": {"hub": {"size": 10, "classes": [{"name": "interactive"}, {"name": "batch", "share": 2}], "groups": [{"name": "silver", "nominal": 2}]}},
			"instances": {"walmart": {"maxConcurrentCalls": 9}}}`,
			`bulkhead budget "hub": groups: drops the group "gold" that the bulkhead "walmart" of the registry joined the budget with: a live registry keeps its groups`},
	}
	for _, tc := range refused {
		t.Run(tc.name, func(t *testing.T) {
			bs, r := hubRegistry(t, hubFile)
			err := fileconfig.Apply(r, decodeFile(t, tc.doc))
			requireFileError(t, err, tc.want)
			// Nothing changed: walmart keeps its size, group and class.
			if s, _ := r.Find("walmart"); s.Config().MaxConcurrentCalls != 8 {
				t.Fatalf("walmart changed to %d by a refused file", s.Config().MaxConcurrentCalls)
			}
			if _, ok := r.Find("kmart"); ok {
				t.Fatal("a refused file created kmart")
			}
			if g, c := usage(t, r, "walmart"); g != "gold" || c != "interactive" {
				t.Fatalf("walmart: group %q class %q after a refused file", g, c)
			}
			hub, _ := bs.Get("hub")
			if len(hub.Config().Groups) != 2 {
				t.Fatalf("the hub changed: %+v", hub.Config().Groups)
			}
		})
	}

	t.Run("accepted", func(t *testing.T) {
		bs, r := hubRegistry(t, hubFile)
		// Same groups and classes, a new size, and a new instance with the
		// default config's: accepted and applied.
		f := decodeFile(t, edit(`"walmart": {"baseConfig": "gold", "maxConcurrentCalls": 9}, "kmart": {"class": "interactive"}`))
		if err := fileconfig.Apply(r, f); err != nil {
			t.Fatal(err)
		}
		if err := bs.Apply(f); err != nil {
			t.Fatal(err)
		}
		if s, _ := r.Find("walmart"); s.Config().MaxConcurrentCalls != 9 {
			t.Fatalf("walmart: %d, want 9", s.Config().MaxConcurrentCalls)
		}
		if g, c := usage(t, r, "kmart"); g != "" || c != "interactive" {
			t.Fatalf("kmart: group %q class %q", g, c)
		}
		// A file without the budget key says nothing about it.
		if err := fileconfig.Apply(r, decodeFile(t, `{"instances": {"walmart": {"maxConcurrentCalls": 7}}}`)); err != nil {
			t.Fatal(err)
		}
		if g, c := usage(t, r, "walmart"); g != "gold" || c != "interactive" {
			t.Fatalf("walmart: group %q class %q after a file without budget", g, c)
		}
	})

	t.Run("a registry built without Budgets", func(t *testing.T) {
		r, err := fileconfig.NewRegistry(decodeFile(t, `{"instances": {"walmart": {}}}`))
		if err != nil {
			t.Fatal(err)
		}
		err = fileconfig.Apply(r, decodeFile(t, hubFile))
		requireFileError(t, err, `bulkhead config: budget "hub": the registry was not built by Budgets.NewRegistry`)
		if s, _ := r.Find("walmart"); s.Config().MaxConcurrentCalls != bulkhead.DefaultConfig().MaxConcurrentCalls {
			t.Fatal("a refused file changed walmart")
		}
	})
}

// Keyed calls race reloads (accepted and refused) and a second registry
// built on the same budgets: under -race nothing races, every permit comes
// back, and the bulkheads keep the group and class they were built with.
func TestKeyedCallsRacingReloadsKeepTheirGroupsAndGiveEveryPermitBack(t *testing.T) {
	bs, r := hubRegistry(t, hubFile)
	f := decodeFile(t, hubFile)
	grow := decodeFile(t, strings.Replace(hubFile, `"maxConcurrentCalls": 8`, `"maxConcurrentCalls": 9`, 1))
	bad := decodeFile(t, strings.Replace(hubFile, `"group": "gold"`, `"group": "silver"`, 1))
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			keys := []string{"walmart", "archive", "k" + strconv.Itoa(g)}
			for i := range 300 {
				l, err := r.TryAcquirePermission(keys[i%len(keys)], bulkhead.CallOptions{Weight: 1 + i%2})
				if err == nil {
					l.FinishCall()
				}
			}
		})
	}
	wg.Go(func() {
		for i := range 50 {
			if err := fileconfig.Apply(r, []fileconfig.File{f, grow}[i%2]); err != nil {
				t.Error(err)
				return
			}
			if err := fileconfig.Apply(r, bad); err == nil {
				t.Error("a file that regroups walmart was applied")
				return
			}
			if err := bs.Apply(f); err != nil {
				t.Error(err)
				return
			}
		}
	})
	wg.Go(func() {
		for range 20 {
			if _, err := bs.NewRegistry(f); err != nil {
				t.Error(err)
				return
			}
		}
	})
	wg.Wait()
	hub, _ := bs.Get("hub")
	if m := hub.Metrics(); m.InUse != 0 || m.Queued != 0 {
		t.Fatalf("hub after the calls: %d in use, %d queued", m.InUse, m.Queued)
	}
	if g, c := usage(t, r, "walmart"); g != "gold" || c != "interactive" {
		t.Fatalf("walmart: group %q class %q", g, c)
	}
}
