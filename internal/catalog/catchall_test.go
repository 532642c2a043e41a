package catalog_test

import "testing"

func TestEnterOrCatchAllSendsTheCatchAllsNameAndNamesBeyondTheCapToIt(t *testing.T) {
	c, _ := newCatalog()
	c.SetMax(1)
	c.Lock()
	c.SetCatchAllLocked("catch-all", "ca")
	c.Unlock()
	if !c.IsCatchAll("catch-all") || c.IsCatchAll("a") {
		t.Fatal("IsCatchAll does not tell the catch-all's name from another")
	}
	a, err := c.EnterOrCatchAll("a", "")
	if err != nil || a.Item() == "ca" {
		t.Fatalf("EnterOrCatchAll under the cap = %v, %v; want a's own entry", a, err)
	}
	for _, name := range []string{"b", "catch-all", "c"} {
		e, err := c.EnterOrCatchAll(name, "")
		if err != nil || e.Item() != "ca" {
			t.Fatalf("EnterOrCatchAll(%q) = %v, %v; want the catch-all", name, e, err)
		}
		e.Leave()
	}
	if got := c.CatchAllCalls(); got != 2 {
		t.Errorf("CatchAllCalls = %d, want 2 (b and c; the catch-all's own name is not turned away)", got)
	}
	if got := c.Live(); got != 2 {
		t.Errorf("Live = %d, want 2 (a and the catch-all)", got)
	}
	a.Leave()
}
