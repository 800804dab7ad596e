package stock

import "testing"

// A named deployment's keys start with its root and keep the item's hash
// tag whole; the default deployment's are the names every release used.
func TestKeyRootOfADeployment(t *testing.T) {
	if got := KeyRoot(""); got != "fs:" {
		t.Fatalf("default root %q, want fs:", got)
	}
	if got := KeyRoot("staging"); got != "fs:staging:" {
		t.Fatalf("staging's root %q, want fs:staging:", got)
	}
	if k := KeysOf(7); k.Stock != "fs:{item:7}:stock" || WarmedItems() != "fs:items" {
		t.Fatalf("default deployment's keys moved: %s, %s", k.Stock, WarmedItems())
	}
	for name, ok := range map[string]bool{"": true, "staging": true, "eu-1": true, "a": true, "Staging": false, "a:b": false, "-a": false, "a-": false, "{x}": false} {
		if ValidDeployment(name) != ok {
			t.Errorf("ValidDeployment(%q) = %v, want %v", name, !ok, ok)
		}
	}
}
