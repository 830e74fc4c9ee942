# linerate — see README.md. `make demo` runs the main job, `make test` the tests.
GO      ?= go
BIN     := bin/linerate
PKG     := ./cmd/linerate
# Static binaries: the same file runs on any lab host of its architecture.
STATIC  := CGO_ENABLED=0
export GOFLAGS := -buildvcs=auto

.PHONY: build test tidy-check bench dist demo setup clean man install uninstall

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

# bench is the one place speed is judged (sweeps/benchtable): linerate (A)
# beside a reference (B) on this machine -- valkey-benchmark plain and
# --tls on one valkey 9.1 from the store, iperf3 3.16+ from trixie on
# loopback and on a netns veth pair, closed loop, the machine's own
# timers -- each pair alternated A B, B A, A B and the medians compared.
# It prints ONE table on stdout (name, A, B, A/B, goal, MET/MISSED; the
# progress and the testing lines go to stderr) and writes the same rows
# with every round's figures, the date, commit and host as JSON to
# BENCH_OUT: bench/results.json unless `make bench BENCH_OUT=path` or
# $BENCH_OUT says otherwise. A MISSED row does not fail it; only a broken
# harness does. BENCH=regexp runs some of its benchmarks (BENCH=Probe).
# Run as root (the netns pair); about 15 minutes on 2 vCPUs.
BENCH_OUT ?= bench/results.json
BENCH     ?= .
bench: setup build
	$(GO) test -c -o bin/benchtable.test ./sweeps/benchtable
	cd sweeps/benchtable && BENCH_OUT=$(abspath $(BENCH_OUT)) ../../bin/benchtable.test \
		-test.run '^$$' -test.bench '$(BENCH)' -test.benchtime 1x -test.timeout 40m

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

# man writes man/linerate.1 and man/linerate-CMD.1 from the command tree
# (the same usage, prose and flags as --help); a test fails when the
# checked-in pages are not what it makes.
man:
	$(GO) test $(PKG) -run '^TestManPages$$' -count=1 -args -update-man

# install puts the binary, the man pages and the bash, zsh and fish
# completion scripts under PREFIX (DESTDIR before it, for packaging);
# uninstall removes exactly those files. go install ./cmd/linerate gives
# the binary alone.
PREFIX  ?= /usr/local
BINDIR  := $(DESTDIR)$(PREFIX)/bin
MANDIR  := $(DESTDIR)$(PREFIX)/share/man/man1
BASHDIR := $(DESTDIR)$(PREFIX)/share/bash-completion/completions
ZSHDIR  := $(DESTDIR)$(PREFIX)/share/zsh/site-functions
FISHDIR := $(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d
install: build
	install -d $(BINDIR) $(MANDIR) $(BASHDIR) $(ZSHDIR) $(FISHDIR)
	install -m 0755 $(BIN) $(BINDIR)/linerate
	install -m 0644 man/*.1 $(MANDIR)/
	$(BIN) completion bash > $(BASHDIR)/linerate
	$(BIN) completion zsh > $(ZSHDIR)/_linerate
	$(BIN) completion fish > $(FISHDIR)/linerate.fish

uninstall:
	rm -f $(BINDIR)/linerate $(BASHDIR)/linerate $(ZSHDIR)/_linerate $(FISHDIR)/linerate.fish
	rm -f $(patsubst man/%,$(MANDIR)/%,$(wildcard man/*.1))

clean:
	rm -rf bin dist
