// Not published: the differential suite of contrib/ro over samber/ro (docs/testing.md).
module github.com/rxbulkhead/bulkhead/bench/rodiff

go 1.26.0

require (
	github.com/rxbulkhead/bulkhead v0.1.0
	github.com/rxbulkhead/bulkhead/contrib/ro v0.1.0
	github.com/samber/lo v1.52.0
	github.com/samber/ro v0.3.0
	go.uber.org/goleak v1.3.0
)

require (
	golang.org/x/exp v0.0.0-20220303212507-bbda1eaf7a17 // indirect
	golang.org/x/text v0.22.0 // indirect
)

replace github.com/rxbulkhead/bulkhead => ../..

replace github.com/rxbulkhead/bulkhead/contrib/ro => ../../contrib/ro
