module github.com/rxbulkhead/bulkhead/contrib/grpc

go 1.26.0

replace github.com/rxbulkhead/bulkhead => ../..

require (
	github.com/rxbulkhead/bulkhead v0.1.0
	github.com/stretchr/testify v1.12.1
	go.uber.org/goleak v1.3.0
	google.golang.org/grpc v1.85.0
)

require (
	github.com/cenkalti/backoff/v4 v4.0.0 // indirect
	github.com/emirpasic/gods v1.12.0 // indirect
	github.com/reactivex/rxgo/v2 v2.5.0 // indirect
	github.com/stretchr/objx v0.5.3 // indirect
	github.com/teivah/onecontext v0.0.0-20200513185103-40f981bfd775 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
	golang.org/x/net v0.60.0 // indirect
	golang.org/x/sys v0.48.0 // indirect
	golang.org/x/text v0.42.0 // indirect
	google.golang.org/genproto/googleapis/rpc v0.0.0-20260817212433-ac3dfec99bb1 // indirect
	google.golang.org/protobuf v1.36.12 // indirect
)
