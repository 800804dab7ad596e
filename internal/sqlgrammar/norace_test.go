//go:build !race

package sqlgrammar_test

// raceBuild: see race_test.go.
const raceBuild = false
