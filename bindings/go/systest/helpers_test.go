// Package systest holds the Go binding's multi-process tests: buyers killed
// with SIGKILL and restarted (kill_test.go), the example HTTP service under
// concurrent clients (service_test.go), and the README snippet
// (readme_test.go).  They drive the real programs: the flashstock command
// (FLASHSTOCK_CLI) and the Go binaries built by CMake (FLASHSTOCK_GO_BIN);
// ctest sets both, and a missing one fails the test.
package systest

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func env(t *testing.T, key string) string {
	t.Helper()
	v := os.Getenv(key)
	if v == "" {
		t.Fatalf("%s is not set (ctest sets it: bindings/go/CMakeLists.txt)", key)
	}
	return v
}

func cli(t *testing.T) string { return env(t, "FLASHSTOCK_CLI") }

func goBin(t *testing.T, name string) string {
	return filepath.Join(env(t, "FLASHSTOCK_GO_BIN"), name)
}

// run runs the flashstock command and fails the test unless it exits 0.
func run(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command(cli(t), args...).CombinedOutput()
	if err != nil {
		t.Fatalf("flashstock %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// newSeg creates a small segment with the CLI and destroys it at the end.
func newSeg(t *testing.T, tag string, extra ...string) string {
	t.Helper()
	name := fmt.Sprintf("/fs-go-%s-%d", tag, os.Getpid())
	args := append([]string{"create", "--name", name, "--activities", "4", "--skus", "8",
		"--shards", "16", "--users", "8192", "--orders", "65536", "--tokens", "64",
		"--requests", "262144", "--locks", "4", "--procs", "64", "--ring", "16384"}, extra...)
	run(t, args...)
	// --force: what the test left in the rings (no daemon drained it) is given up
	t.Cleanup(func() { _ = exec.Command(cli(t), "destroy", "--name", name, "--force").Run() })
	return name
}

// walOrder is one order record of `flashstock wal dump`.
type walOrder struct {
	activity, sku, qty uint64
	user               uint64
}

// walDump parses `flashstock wal dump --wal DIR`: the order records by
// number (a number twice fails the test) and the cancelled numbers.
func walDump(t *testing.T, dir string) (map[uint64]walOrder, map[uint64]bool) {
	t.Helper()
	out := run(t, "wal", "dump", "--wal", dir)
	orders := map[uint64]walOrder{}
	cancels := map[uint64]bool{}
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 3 || (f[1] != "order" && f[1] != "cancel") {
			continue
		}
		kv := map[string]uint64{}
		for _, p := range f[2:] {
			if k, v, ok := strings.Cut(p, "="); ok {
				n, _ := strconv.ParseInt(v, 10, 64)
				kv[k] = uint64(n)
			}
		}
		no := kv["order"]
		if f[1] == "order" {
			if _, dup := orders[no]; dup {
				t.Fatalf("order %d is in the WAL twice", no)
			}
			orders[no] = walOrder{kv["activity"], kv["sku"], kv["qty"], kv["user"]}
		} else {
			if cancels[no] {
				t.Fatalf("order %d is cancelled twice in the WAL", no)
			}
			cancels[no] = true
		}
	}
	return orders, cancels
}
