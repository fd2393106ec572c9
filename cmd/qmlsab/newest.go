package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/qmlsab/qmlsab/store"
)

// newestRun is the run folder under root whose manifest was created last
// (for `qmlsab report` without a folder): by the creation time the
// manifest records, not by name, so a folder named my-baseline does not
// shadow the runs after it. Equal times go to the name sorting last;
// folders whose manifest cannot be read are passed over, and named when
// no folder is left.
func newestRun(root string) (string, error) {
	entries, err := os.ReadDir(root)
	if err != nil {
		return "", fmt.Errorf("no run given and %s cannot be read: %w", root, err)
	}
	var best string
	var bestM *store.Manifest
	var unreadable []string
	for _, e := range entries { // sorted by name
		if !e.IsDir() {
			continue
		}
		dir := filepath.Join(root, e.Name())
		if _, err := os.Stat(filepath.Join(dir, store.ManifestFile)); err != nil {
			continue
		}
		m, err := store.ReadManifest(dir)
		if err != nil {
			unreadable = append(unreadable, fmt.Sprintf("%s: %v", dir, err))
			continue
		}
		if bestM == nil || !m.Created.Before(bestM.Created) {
			best, bestM = dir, &m
		}
	}
	switch {
	case bestM != nil:
		return best, nil
	case len(unreadable) > 0:
		return "", fmt.Errorf("no run given and no readable run folder in %s: %v", root, unreadable)
	}
	return "", fmt.Errorf("no run given and no run folder in %s (run qmlsab run first)", root)
}
