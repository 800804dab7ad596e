package main

import (
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// storeClients are the modules flashsalectl must never link: it speaks only
// HTTP to the ingress's admin API (pkg/ctl's doc), so a store client in its
// binary means a package it imports reaches for the stores, or for a type
// that lives beside code that does.
var storeClients = []string{"github.com/redis/go-redis", "github.com/go-sql-driver/mysql"}

// TestLinksNoStoreClient: go list -deps of flashsalectl holds neither the
// Redis client nor the MySQL driver; a failure names the packages that
// import one, the link to cut.
func TestLinksNoStoreClient(t *testing.T) {
	cmd := exec.Command("go", "list", "-deps", "-f", `{{.ImportPath}} {{join .Imports " "}}`, ".")
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps .: %v", err)
	}
	client := func(p string) string {
		for _, m := range storeClients {
			if p == m || strings.HasPrefix(p, m+"/") {
				return m
			}
		}
		return ""
	}
	banned := func(p string) bool { return client(p) != "" }
	var linked, importers []string
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) < 10 {
		t.Fatalf("go list -deps . printed %d packages, expected flashsalectl's whole graph:\n%s", len(lines), out)
	}
	for _, line := range lines {
		f := strings.Fields(line)
		if m := client(f[0]); m != "" {
			if !slices.Contains(linked, m) {
				linked = append(linked, m)
			}
			continue
		}
		if slices.ContainsFunc(f[1:], banned) {
			importers = append(importers, f[0])
		}
	}
	if len(linked) > 0 {
		t.Errorf("flashsalectl links %s, imported by %s", strings.Join(linked, ", "), strings.Join(importers, ", "))
	}
}
