package deploy

import (
	"os"
	"strings"
	"testing"

	"github.com/flashsale-dev/flashsale/pkg/config"
)

// TestReadmeDocumentsEverySetting keeps docs/configuration.md's table in
// step with pkg/config: an operator should never meet an undocumented knob.
func TestReadmeDocumentsEverySetting(t *testing.T) {
	b, err := os.ReadFile("../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	for _, n := range config.Names(&config.Common{}, &config.Ingress{}, &config.Consumer{}, &config.Reaper{}, &config.Setup{}) {
		if !strings.Contains(readme, "`"+n+"`") {
			t.Errorf("docs/configuration.md does not document %s", n)
		}
	}
}
