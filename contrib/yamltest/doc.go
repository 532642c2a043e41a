// Package yamltest proves that the configuration file types of package
// fileconfig (core module) decode with real YAML libraries
// (go.yaml.in/yaml/v3 and gopkg.in/yaml.v3) although the core module
// depends on none, and that the YAML examples in docs/ are valid. It has no
// API: everything is in its tests, and it lives in its own module so that
// the YAML libraries stay out of the core go.mod.
package yamltest
