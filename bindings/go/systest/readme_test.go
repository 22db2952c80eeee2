// readme_test.go -- the Go snippet of the binding's README and of the
// project's docs/go.md is the marked region of example/main.go, which
// service_test.go runs, its batch snippet the body of placeBatch, which
// ExampleHandle_OrderMany runs, its reservations snippet the body of pay,
// which ExampleHandle_Confirm runs, its versioned terms snippet the body of
// buy, which ExampleHandle_SkuPriceSet runs, its carts snippet the body of
// checkout, which ExampleHandle_CartOrder runs, and its feed snippet the
// body of fulfil, which feed_test.go runs: they cannot rot.
package systest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// between returns the lines strictly between the first line equal to begin
// and the next line equal to end.
func between(t *testing.T, text, begin, end, what string) string {
	t.Helper()
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		if l != begin {
			continue
		}
		for j := i + 1; j < len(lines); j++ {
			if lines[j] == end {
				return strings.Join(lines[i+1:j], "\n")
			}
		}
	}
	t.Fatalf("%s: no %q ... %q region", what, begin, end)
	return ""
}

func TestReadmeSnippetIsTheTestedExampleCode(t *testing.T) {
	src := os.Getenv("FLASHSTOCK_GO_SRC")
	if src == "" {
		src = ".."
	}
	ex, err := os.ReadFile(filepath.Join(src, "example", "main.go"))
	if err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(filepath.Join(src, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	code := between(t, string(ex), "// README begin", "// README end", "example/main.go")
	snippet := between(t, string(md), "```go", "```", "README.md")
	if snippet != code {
		t.Errorf("README.md's Go snippet differs from example/main.go's README region:\n"+
			"--- README.md\n%s\n--- example/main.go\n%s", snippet, code)
	}
	// the project's docs/go.md shows it too, under its "# From Go" heading
	doc, err := os.ReadFile(filepath.Join(src, "..", "..", "docs", "go.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(doc), "# From Go\n") {
		t.Fatal("docs/go.md does not begin with \"# From Go\"")
	}
	if docSnippet := between(t, string(doc), "```go", "```", "docs/go.md"); docSnippet != code {
		t.Errorf("docs/go.md's Go snippet differs from example/main.go's README region:\n"+
			"--- docs/go.md\n%s\n--- example/main.go\n%s", docSnippet, code)
	}
	// the feed section's snippet is the body of fulfil (feed_test.go, one tab less)
	ft, err := os.ReadFile(filepath.Join(src, "systest", "feed_test.go"))
	if err != nil {
		t.Fatal(err)
	}
	loop := between(t, string(ft), "\t// README feed begin", "\t// README feed end", "systest/feed_test.go")
	var body []string
	for _, l := range strings.Split(loop, "\n") {
		body = append(body, strings.TrimPrefix(l, "\t"))
	}
	fsec := string(md)
	if i := strings.Index(fsec, "\n### Consuming orders"); i >= 0 {
		fsec = fsec[i+1:]
	} else {
		t.Fatal("bindings/go/README.md has no \"### Consuming orders\" section")
	}
	if got := between(t, fsec, "```go", "```", "README.md"); got != strings.Join(body, "\n") {
		t.Errorf("README.md's feed snippet differs from fulfil in systest/feed_test.go:\n"+
			"--- README.md\n%s\n--- feed_test.go\n%s", got, strings.Join(body, "\n"))
	}
	// the batch section's snippet is the body of placeBatch (example_test.go, one tab less)
	et, err := os.ReadFile(filepath.Join(src, "example_test.go"))
	if err != nil {
		t.Fatal(err)
	}
	var batch []string
	for _, l := range strings.Split(between(t, string(et), "\t// README batch begin", "\t// README batch end",
		"example_test.go"), "\n") {
		batch = append(batch, strings.TrimPrefix(l, "\t"))
	}
	bsec := string(md)
	if i := strings.Index(bsec, "\n### Batches of orders"); i >= 0 {
		bsec = bsec[i+1:]
	} else {
		t.Fatal("bindings/go/README.md has no \"### Batches of orders\" section")
	}
	if got := between(t, bsec, "```go", "```", "README.md"); got != strings.Join(batch, "\n") {
		t.Errorf("README.md's batch snippet differs from placeBatch in example_test.go:\n"+
			"--- README.md\n%s\n--- example_test.go\n%s", got, strings.Join(batch, "\n"))
	}
	// the reservations section's snippet is the body of pay (example_test.go, one tab less)
	var pay []string
	for _, l := range strings.Split(between(t, string(et), "\t// README reserve begin", "\t// README reserve end",
		"example_test.go"), "\n") {
		pay = append(pay, strings.TrimPrefix(l, "\t"))
	}
	rsec := string(md)
	if i := strings.Index(rsec, "\n### Reservations"); i >= 0 {
		rsec = rsec[i+1:]
	} else {
		t.Fatal("bindings/go/README.md has no \"### Reservations\" section")
	}
	if got := between(t, rsec, "```go", "```", "README.md"); got != strings.Join(pay, "\n") {
		t.Errorf("README.md's reservations snippet differs from pay in example_test.go:\n"+
			"--- README.md\n%s\n--- example_test.go\n%s", got, strings.Join(pay, "\n"))
	}
	// the versioned terms section's snippet is the body of buy (example_test.go, one tab less)
	var buy []string
	for _, l := range strings.Split(between(t, string(et), "\t// README terms begin", "\t// README terms end",
		"example_test.go"), "\n") {
		buy = append(buy, strings.TrimPrefix(l, "\t"))
	}
	vsec := string(md)
	if i := strings.Index(vsec, "\n### Versioned terms"); i >= 0 {
		vsec = vsec[i+1:]
	} else {
		t.Fatal("bindings/go/README.md has no \"### Versioned terms\" section")
	}
	if got := between(t, vsec, "```go", "```", "README.md"); got != strings.Join(buy, "\n") {
		t.Errorf("README.md's versioned terms snippet differs from buy in example_test.go:\n"+
			"--- README.md\n%s\n--- example_test.go\n%s", got, strings.Join(buy, "\n"))
	}
	// the carts section's snippet is the body of checkout (example_test.go, one tab less)
	var checkout []string
	for _, l := range strings.Split(between(t, string(et), "\t// README cart begin", "\t// README cart end",
		"example_test.go"), "\n") {
		checkout = append(checkout, strings.TrimPrefix(l, "\t"))
	}
	csec := string(md)
	if i := strings.Index(csec, "\n### Carts"); i >= 0 {
		csec = csec[i+1:]
	} else {
		t.Fatal("bindings/go/README.md has no \"### Carts\" section")
	}
	if got := between(t, csec, "```go", "```", "README.md"); got != strings.Join(checkout, "\n") {
		t.Errorf("README.md's carts snippet differs from checkout in example_test.go:\n"+
			"--- README.md\n%s\n--- example_test.go\n%s", got, strings.Join(checkout, "\n"))
	}
	if len(strings.Split(code, "\n")) < 10 {
		t.Errorf("the README region of example/main.go has only %d lines", len(strings.Split(code, "\n")))
	}
}
