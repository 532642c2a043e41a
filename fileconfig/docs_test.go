package fileconfig_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/rxbulkhead/bulkhead/fileconfig"
)

// jsonBlockRE finds fenced json blocks and the HTML comment that may precede
// them: <!-- config: error --> (the block must be refused) or
// <!-- config: skip --> (not a configuration file). contrib/yamltest checks
// the yaml blocks the same way.
var jsonBlockRE = regexp.MustCompile("(?m)(?:^<!-- config: (\\w+) -->\\n)?^```json\\n((?s:.*?))^```")

func TestDocsJSONBlocksAreValidConfigs(t *testing.T) {
	files, err := filepath.Glob("../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, file := range append(files, "../README.md") {
		text, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range jsonBlockRE.FindAllStringSubmatch(string(text), -1) {
			mode, block := m[1], m[2]
			if mode == "skip" {
				continue
			}
			checked++
			var f fileconfig.File
			err := json.Unmarshal([]byte(block), &f)
			switch {
			case mode == "error" && err == nil:
				t.Errorf("%s: this block should be refused but is valid:\n%s", file, block)
			case mode != "error" && err != nil:
				t.Errorf("%s: %v\n%s", file, err, block)
			}
		}
	}
	if checked == 0 {
		t.Fatal("found no json block in docs/*.md")
	}
}
