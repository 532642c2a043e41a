// Not published: tests that configuration files decode with YAML libraries.
module github.com/rxbulkhead/bulkhead/contrib/yamltest

go 1.26

replace github.com/rxbulkhead/bulkhead => ../..

require (
	github.com/rxbulkhead/bulkhead v0.1.0
	go.uber.org/goleak v1.3.0
	go.yaml.in/yaml/v3 v3.0.6
	gopkg.in/yaml.v3 v3.0.1
)

require github.com/kr/text v0.2.0 // indirect
