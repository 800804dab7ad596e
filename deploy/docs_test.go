package deploy

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The README is the newcomer's first page: what flashsale is, the picture,
// the two commands, the first sale, then links. Everything else lives in
// docs/, one page per reader (issue 40 item 6).
const readmeMaxLines = 300

func readDoc(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestDocsReadmeIsShort: README.md has at most readmeMaxLines lines and
// shows the two set-up commands, `make run` and `make test`, as lines of
// their own (a code block), not merely mentioned.
func TestDocsReadmeIsShort(t *testing.T) {
	readme := readDoc(t, "../README.md")
	if n := len(strings.Split(strings.TrimSuffix(readme, "\n"), "\n")); n > readmeMaxLines {
		t.Errorf("README.md has %d lines, more than %d: move the rest to a page of docs/ and link it", n, readmeMaxLines)
	}
	for _, cmd := range []string{"make run", "make test"} {
		if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(cmd) + `(\s|$)`).MatchString(readme) {
			t.Errorf("README.md does not show the command %q on a line of its own", cmd)
		}
	}
}

// modulePackages lists the module's packages relative to the module path
// ("pkg/stock"), as go list sees them (packages of test files only, such as
// deploy itself, included).
func modulePackages(t *testing.T) []string {
	t.Helper()
	cmd := exec.Command("go", "list", "-e", "-f", "{{.ImportPath}}", "./...")
	cmd.Dir = ".."
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list ./...: %v", err)
	}
	mod := regexp.MustCompile(`(?m)^module\s+(\S+)`).FindStringSubmatch(readDoc(t, "../go.mod"))
	if mod == nil {
		t.Fatal("go.mod names no module")
	}
	var pkgs []string
	for _, p := range strings.Fields(string(out)) {
		if p == mod[1] {
			pkgs = append(pkgs, ".")
			continue
		}
		rel, ok := strings.CutPrefix(p, mod[1]+"/")
		if !ok {
			t.Fatalf("go list printed %q, not a package of module %s", p, mod[1])
		}
		pkgs = append(pkgs, rel)
	}
	if len(pkgs) < 30 {
		t.Fatalf("go list found only %d packages: %v", len(pkgs), pkgs)
	}
	return pkgs
}

// TestDocsLayoutNamesEveryPackage: the layout (docs/layout.md, linked from
// the README) names every Go package of the module as a code span, `pkg/x`
// or `pkg/x/`, so a new package cannot go undescribed.
func TestDocsLayoutNamesEveryPackage(t *testing.T) {
	layout := readDoc(t, "../docs/layout.md")
	if !strings.Contains(readDoc(t, "../README.md"), "](docs/layout.md)") {
		t.Error("README.md does not link docs/layout.md")
	}
	var missing []string
	for _, p := range modulePackages(t) {
		if !strings.Contains(layout, "`"+p+"`") && !strings.Contains(layout, "`"+p+"/`") {
			missing = append(missing, p)
		}
	}
	if len(missing) > 0 {
		t.Errorf("docs/layout.md does not name these packages of the module (as `path` or `path/`): %s", strings.Join(missing, ", "))
	}
}

var (
	mdLink     = regexp.MustCompile(`\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
	codeSpan   = regexp.MustCompile("(?s)`[^`]*`")
	linkScheme = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`)
)

// relativeLinks returns the targets of the inline links and images of a
// Markdown text that are not URLs (http:, https:, mailto:, ...), leaving out
// fenced code blocks and code spans.
func relativeLinks(md string) []string {
	var prose []string
	inFence := false
	for _, line := range strings.Split(md, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			inFence = !inFence
			continue
		}
		if !inFence {
			prose = append(prose, line)
		}
	}
	text := codeSpan.ReplaceAllString(strings.Join(prose, "\n"), "")
	var out []string
	for _, m := range mdLink.FindAllStringSubmatch(text, -1) {
		if !linkScheme.MatchString(m[1]) {
			out = append(out, m[1])
		}
	}
	return out
}

// TestDocsLinksResolve: every relative link of README.md and docs/*.md
// points to a file of the repository, and a link with a #fragment to a
// heading of that Markdown file whose GitHub anchor is the fragment. A page
// moved or a heading renamed breaks the links to it; this finds them.
func TestDocsLinksResolve(t *testing.T) {
	files, err := filepath.Glob("../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	files = append([]string{"../README.md"}, files...)
	checked := 0
	for _, f := range files {
		for _, link := range relativeLinks(readDoc(t, f)) {
			checked++
			path, anchor, _ := strings.Cut(link, "#")
			target := f
			if path != "" {
				target = filepath.Join(filepath.Dir(f), filepath.FromSlash(path))
			}
			if _, err := os.Stat(target); err != nil {
				t.Errorf("%s: link %q: %s does not exist", f, link, target)
				continue
			}
			if anchor == "" {
				continue
			}
			if !strings.HasSuffix(target, ".md") {
				t.Errorf("%s: link %q: #%s in %s, which is not Markdown: no headings to check", f, link, anchor, target)
				continue
			}
			if !githubAnchors(readDoc(t, target))[anchor] {
				t.Errorf("%s: link %q: %s has no heading with anchor #%s", f, link, target, anchor)
			}
		}
	}
	if checked < 30 {
		t.Fatalf("found only %d relative links in README.md and docs/*.md: the parser is broken", checked)
	}
}

func TestDocsRelativeLinks(t *testing.T) {
	got := relativeLinks("see [a](docs/a.md#x), ![i](i.png \"t\") and [w](https://x.org)\n" +
		"`[not](in-code.md)` [m](mailto:a@b)\n```\n[no](fenced.md)\n```\n[b](#b)\n")
	want := []string{"docs/a.md#x", "i.png", "#b"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("relativeLinks = %q, want %q", got, want)
	}
}
