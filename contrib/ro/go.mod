module github.com/rxbulkhead/bulkhead/contrib/ro

go 1.26.0

require (
	github.com/rxbulkhead/bulkhead v0.1.0
	github.com/samber/ro v0.3.0
	github.com/stretchr/testify v1.12.1
	go.uber.org/goleak v1.3.0
)

require (
	github.com/cenkalti/backoff/v4 v4.0.0 // indirect
	github.com/emirpasic/gods v1.12.0 // indirect
	github.com/reactivex/rxgo/v2 v2.5.0 // indirect
	github.com/samber/lo v1.52.0 // indirect
	github.com/stretchr/objx v0.5.3 // indirect
	github.com/teivah/onecontext v0.0.0-20200513185103-40f981bfd775 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
	golang.org/x/exp v0.0.0-20220303212507-bbda1eaf7a17 // indirect
	golang.org/x/text v0.22.0 // indirect
)

replace github.com/rxbulkhead/bulkhead => ../..
