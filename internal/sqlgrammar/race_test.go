//go:build race

package sqlgrammar_test

// raceBuild is true in a test binary built with -race. The module's export
// data is then asked of go list with -race too, so it is the export data
// that building this very test (and make test's go vet -race) already left
// in the build cache; without it, go list compiled every package of the
// module and its dependencies a second time, without -race (65 s of a cold
// make test's go-test step).
const raceBuild = true
