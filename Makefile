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

# Tests that judge time or throughput against something measured beside
# them (the link calibration against iperf3, requests late or latency
# added on an idle machine, schedule drift) run after the rest, one
# package at a time: on 2 cores a package running beside them moves one
# side of the comparison (one SET flow read 18 then 10 Gbps; 248 of 1200
# paced requests late). They are skipped in the first pass, run in the
# second: none is left out.
ALONE   := TestCalibrationMatchesIperf3|TestOpenLoopKeepsUpWithinOnePercent|TestProbeAddsNothingBesideATinyLoad|TestScheduleDoesNotDriftOverAMinute|TestOpenLoopShowsTheQueueClosedLoopHides|TestGoRuntimeStaysAsleepWhileBytesMove
test: setup tidy-check
	$(GO) vet ./...
	$(GO) test -count=1 -timeout 80m -skip '^($(ALONE))$$' ./...
	$(GO) test -count=1 -timeout 20m -p 1 -run '^($(ALONE))$$' ./...

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

clean:
	rm -rf bin dist
