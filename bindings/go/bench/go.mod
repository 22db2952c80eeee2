module flashstock/go/bench

go 1.19

require (
	flashstock/go/flashstock v0.0.0
	github.com/gomodule/redigo v1.8.3
)

// the binding from this checkout; redigo from Debian's
// golang-github-gomodule-redigo-dev (no network: GOPROXY=off)
replace flashstock/go/flashstock => ../

replace github.com/gomodule/redigo => /usr/share/gocode/src/github.com/gomodule/redigo
