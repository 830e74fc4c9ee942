# linerate — see README.md. `make demo` runs the main job, `make test` the tests.
GO      ?= go
BIN     := bin/linerate
PKG     := ./cmd/linerate
# Static binaries: the same file runs on any lab host of its architecture.
STATIC  := CGO_ENABLED=0
export GOFLAGS := -buildvcs=auto

.PHONY: build test tidy-check bench dist demo setup clean

build:
	$(STATIC) $(GO) build -o $(BIN) $(PKG)

# setup installs what the tests need (Debian packages); it is quick when
# everything is already there.
setup:
	bash .ci/setup

# test: correctness only (speed is judged in make bench). Every package
# runs against the one linerate binary make build just made (test
# packages that start `linerate` share it instead of linking their own),
# four packages at a time: most tests wait on servers, namespaces and
# windows rather than on a CPU. Beside them, the linux/arm64 build runs
# the kernel- and wire-facing packages under qemu-user (.ci/arm64), its
# report printed at the end; either failing fails make test.
test: setup tidy-check build
	$(GO) vet ./...
	bash .ci/test $(BIN)

# tidy-check fails when go.mod or go.sum differ from what `go mod tidy`
# makes: a module imported but marked indirect, one no longer used, a
# missing checksum. It prints the diff; run `go mod tidy` to fix.
tidy-check:
	$(GO) mod tidy -diff

# bench prints ratios measured side by side in one run (linerate vs the peer
# benchmark on the same server, plaintext and TLS; linerate over TLS vs
# plaintext on the same cell; linerate vs iperf3 on loopback).
bench: setup build
	$(GO) test -count=1 -timeout 60m -run '^$$' -bench . -benchtime 1x ./lab/labbench/

# dist strips the symbol table and DWARF (-s -w): a smaller file to upload
# to every lab host; panics still name file and line, and the build info
# (version, commit) stays.
DIST    := dist/linerate-linux-amd64 dist/linerate-linux-arm64
dist:
	$(STATIC) GOOS=linux GOARCH=amd64 $(GO) build -trimpath -ldflags='-s -w' -o dist/linerate-linux-amd64 $(PKG)
	$(STATIC) GOOS=linux GOARCH=arm64 $(GO) build -trimpath -ldflags='-s -w' -o dist/linerate-linux-arm64 $(PKG)
	@stat -c '%s %n' $(DIST) | awk '{ printf "%s  %d bytes (%.1f MiB)\n", $$2, $$1, $$1 / 1048576 }'

demo: setup build
	bash .ci/demo

clean:
	rm -rf bin dist
