package rxtest

import "github.com/reactivex/rxgo/v2"

// Drain reads ch until it closes and returns what it read.
func Drain(ch <-chan rxgo.Item) []rxgo.Item {
	var items []rxgo.Item
	for it := range ch {
		items = append(items, it)
	}
	return items
}

// Values returns the value of each item, or its error for an error item.
func Values(items []rxgo.Item) []any {
	var vs []any
	for _, it := range items {
		if it.Error() {
			vs = append(vs, it.E)
		} else {
			vs = append(vs, it.V)
		}
	}
	return vs
}
