package fileconfig_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/fileconfig"
)

// The bad inputs of configuration files; docs/reliability.md lists them
// with the root package's (TestBadInputTableMatchesTheTests).

// loadJSON decodes and resolves a registry config file.
func loadJSON(doc string) error {
	var f fileconfig.File
	if err := json.Unmarshal([]byte(doc), &f); err != nil {
		return err
	}
	_, err := f.Resolve()
	return err
}

// requireFileError checks a config file error: it matches ErrInvalidConfig
// and its message contains every part.
func requireFileError(t *testing.T, err error, parts ...string) {
	t.Helper()
	var fe *fileconfig.Error
	if !errors.As(err, &fe) || !errors.Is(err, bulkhead.ErrInvalidConfig) {
		t.Fatalf("got %v (%T), want a *fileconfig.Error matching ErrInvalidConfig", err, err)
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Errorf("message %q does not contain %q", err, p)
		}
	}
}

func TestBadInputConfigFileUnknownKey(t *testing.T) {
	err := loadJSON(`{"instances": {"walmart": {"maxConcurentCalls": 5}}}`)
	requireFileError(t, err, `bulkhead "walmart"`, "maxConcurentCalls", "unknown key (known: adaptive, baseConfig, class, group, maxConcurrentCalls, maxQueuedCalls, maxWaitDuration, queueOrder, shadowMode, store)")
}

func TestBadInputConfigFileDurationWithoutUnit(t *testing.T) {
	err := loadJSON(`{"configs": {"default": {"maxWaitDuration": 50}}}`)
	requireFileError(t, err, `bulkhead config "default"`, "maxWaitDuration 50", "not a duration")
}

func TestBadInputConfigFileNegativeValue(t *testing.T) {
	err := loadJSON(`{"instances": {"walmart": {"maxConcurrentCalls": -2}}}`)
	requireFileError(t, err, `bulkhead "walmart"`, "maxConcurrentCalls -2", "must be >= 1")
}

func TestBadInputConfigFileUnknownBaseConfig(t *testing.T) {
	err := loadJSON(`{"instances": {"walmart": {"baseConfig": "big"}}}`)
	requireFileError(t, err, `bulkhead "walmart"`, `baseConfig "big"`, "no such config (known: none)")
}

func TestBadInputConfigFileInheritanceCycle(t *testing.T) {
	err := loadJSON(`{"configs": {"a": {"baseConfig": "b"}, "b": {"baseConfig": "a"}}}`)
	requireFileError(t, err, "inheritance cycle a -> b -> a")
}

func TestBadInputConfigFileBudgetKeyNamingNothing(t *testing.T) {
	budgets := `"budgets": {"hub": {"size": 4, "classes": [{"name": "interactive"}], "groups": [{"name": "gold", "nominal": 2}]}}`
	err := loadJSON(`{"budget": "hub", ` + budgets + `, "instances": {"walmart": {"group": "platinum"}}}`)
	requireFileError(t, err, `bulkhead "walmart": group "platinum": no such group of budget "hub" (known: gold)`)
	err = loadJSON(`{` + budgets + `, "instances": {"walmart": {"class": "interactive"}}}`)
	requireFileError(t, err, `bulkhead "walmart": class "interactive": needs a budget`)
}

func TestBadInputConfigFileNotJSON(t *testing.T) {
	err := loadJSON(`configs: {default: {maxConcurrentCalls: 2}}`)
	var syn *json.SyntaxError
	if !errors.As(err, &syn) {
		t.Fatalf("got %v (%T), want a *json.SyntaxError", err, err)
	}
}

func TestBadInputConfigFileReportsEveryProblemAtOnce(t *testing.T) {
	err := loadJSON(`{"instances": {"b": {"maxWaitDuration": "5 parsecs"}, "a": {"maxQueuedCalls": -1}}}`)
	requireFileError(t, err, `bulkhead "a": maxQueuedCalls -1: must be >= 0`, `bulkhead "b": maxWaitDuration "5 parsecs": not a duration`)
}
