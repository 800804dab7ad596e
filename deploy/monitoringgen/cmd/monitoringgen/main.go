// Command monitoringgen writes deploy/k8s/monitoring's generated files
// (package monitoringgen says which and why). Run by
// `go generate ./deploy/monitoringgen`.
package main

import (
	"flag"
	"log"
	"os"
	"path/filepath"

	"github.com/flashsale-dev/flashsale/deploy/monitoringgen"
)

func main() {
	dir := flag.String("deploy", "deploy", "the repository's deploy directory")
	flag.Parse()
	files, err := monitoringgen.Files(*dir)
	if err != nil {
		log.Fatal(err)
	}
	for path, b := range files {
		if err := os.WriteFile(filepath.Join(*dir, path), b, 0o644); err != nil {
			log.Fatal(err)
		}
	}
}
