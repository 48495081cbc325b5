package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/coworkbridge/coworkbridge/managedconfig"
)

// The example files an admin copies into an MDM profile must be valid as they are.
func TestDeployExamplesAreValidManagedConfigs(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("..", "..", "deploy", "*.json"))
	files = append(files, filepath.Join("..", "..", "examples", "managed.json"))
	if len(files) < 3 {
		t.Fatalf("expected the deploy examples, found %v", files)
	}
	env := managedconfig.Env{GOOS: "darwin", Home: "/Users/alex", Getenv: func(string) string { return "" }}
	paths, err := env.Paths()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := managedconfig.Parse(data, f, env, paths)
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		if !cfg.CoworkEnabled {
			t.Errorf("%s does not switch coworkbridge on", f)
		}
	}
}
