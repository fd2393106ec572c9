# qmlsab — `make` builds, `make test` runs every test, `make run` runs the main job.
GO      ?= go
BIN     := bin
PKGS    := ./...
# Packages with goroutines that must stay race-clean.
RACE_PKGS := ./mongosim/... ./target/... ./arms/... ./collect/... ./progress/... ./store/... ./report/... ./workload/... ./run/virtual/... ./ftdc/... ./changepoint/... ./history/... ./sweep/...
# Fuzz runs are bounded by executions, not time (a few seconds each here): a
# run ended by a -fuzztime deadline can report "context deadline exceeded"
# as a failure when a worker is mid-way, with no crasher found.
FUZZMINIMIZE ?= 100x

.PHONY: all build test vet static fmt-check tidy-check race fuzz tools mongosh chromium mongosh-check chromium-check peer-check run calibrate bench clean

all: build

build:
	$(GO) build -o $(BIN)/qmlsab ./cmd/qmlsab
	$(GO) build -o $(BIN)/mongosim ./cmd/mongosim

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet $(PKGS)

# The checks that need no test run, one after another.
static:
	$(MAKE) fmt-check
	$(MAKE) tidy-check
	$(MAKE) vet
	$(MAKE) build

# go.mod lists what the code imports, direct dependencies unmarked.
tidy-check:
	@$(GO) mod tidy -diff || { echo "go.mod/go.sum are not tidy: run go mod tidy"; exit 1; }

race:
	$(GO) test -race -short -count=1 -timeout 30m $(RACE_PKGS)
	# The orchestrator runs trials, faults and actors concurrently: real-time
	# runs under -race, faults included. The three real-time tests run only
	# here (run's onlyUnderRace): without the detector they would repeat
	# the same trials.
	$(GO) test -race -count=1 -timeout 30m -run '^(TestRunWritesInterleavedValidTrials|TestFaultsOnTheEmbeddedSet|TestKillOpActorSurvivesADroppedConnection|TestVirtualTrialRecordsWhatTheModelDid)$$' ./run/

# Short fuzz runs of every fuzz target (seed corpora live in testdata/fuzz).
fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzParse$$' -fuzztime 60000x -fuzzminimizetime $(FUZZMINIMIZE) ./mongosim/wire
	$(GO) test -run '^$$' -fuzz '^FuzzCompile$$' -fuzztime 80000x -fuzzminimizetime $(FUZZMINIMIZE) ./mongosim/query
	$(GO) test -run '^$$' -fuzz '^FuzzParse$$' -fuzztime 50000x -fuzzminimizetime $(FUZZMINIMIZE) ./arms
	$(GO) test -run '^$$' -fuzz '^FuzzParse$$' -fuzztime 40000x -fuzzminimizetime $(FUZZMINIMIZE) ./workload
	$(GO) test -run '^$$' -fuzz '^FuzzParseGates$$' -fuzztime 12000x -fuzzminimizetime $(FUZZMINIMIZE) ./report
	$(GO) test -run '^$$' -fuzz '^FuzzOpen$$' -fuzztime 2500x -fuzzminimizetime $(FUZZMINIMIZE) ./store
	$(GO) test -run '^$$' -fuzz '^FuzzDecode$$' -fuzztime 60000x -fuzzminimizetime $(FUZZMINIMIZE) ./ftdc
	$(GO) test -run '^$$' -fuzz '^FuzzServerReplies$$' -fuzztime 25000x -fuzzminimizetime $(FUZZMINIMIZE) ./collect
	$(GO) test -run '^$$' -fuzz '^FuzzDetect$$' -fuzztime 40000x -fuzzminimizetime $(FUZZMINIMIZE) ./changepoint

# A real client nobody here wrote: mongosh against a 3-process mongosim set.
mongosh-check: build
	bash scripts/mongosh-check.sh

# The programs the checks drive, installed when missing: mongosh from the
# npm registry into .tools/, Debian's chromium. make test installs them
# beside the static checks' compile (downloads wait on the network).
tools: mongosh chromium

mongosh:
	MONGOSH_CHECK_PART=install bash scripts/mongosh-check.sh

chromium:
	@command -v chromium >/dev/null 2>&1 || { echo "installing chromium (Debian package)"; \
	  $$(command -v sudo) apt-get update -qq && $$(command -v sudo) apt-get install -y -qq chromium >/dev/null; }

# The HTML pages in a real browser: Debian's chromium opens reports, trend
# and sweep pages with name resolution disabled. Every Test…InChromium runs
# here, and only here (QMLSAB_CHROMIUM).
chromium-check: chromium
	QMLSAB_CHROMIUM=$$(command -v chromium) $(GO) test -count=1 -run '^Test.*InChromium$$' ./cmd/qmlsab/

# FerretDB v1.24.2, an independent wire-protocol server, as a test-only
# peer: a nested module (peers/ferretdb/README.md), so FerretDB never
# reaches the product's dependencies. Its first build takes minutes.
# Programs nobody here wrote, each in a nested module of its own so their
# requirements never reach the product's go.mod: FerretDB (an independent
# server) and benchstat (the reader bench.txt is written for).
peer-check: build
	cd peers/ferretdb && $(GO) vet ./...
	cd peers/ferretdb && $(GO) test -count=1 -timeout 20m ./...
	cd peers/benchstat && $(GO) vet ./... && $(GO) test -count=1 -timeout 10m ./...

# make test in steps that share the 2-core machine: the compile of the
# static checks beside the downloads of tools; the fuzz runs (CPU) beside
# the mongosh and browser checks (which mostly wait on processes and a
# browser; all three wait for events under generous bounds, never for
# intervals); then the race detector and the peers, each alone (with the
# peers' build beside the fuzz runs a clean clone's make test took 21m57s,
# against 20m38s without: both want the CPU); last the packages' own
# tests, three packages at once (-p 3), since the two of real-time trials
# (run, cmd/qmlsab) mostly wait on their trials and leave a core to the
# others. Each step's output comes whole when it ends (--output-sync), and
# Go's own summary comes last so it closes the output CI reads. -timeout
# 30m is a hang guard, not a speed target (go test's default is 10 min).
test:
	$(MAKE) -j3 --output-sync=target static tools
	$(MAKE) -j3 --output-sync=target mongosh-check chromium-check fuzz
	$(MAKE) race
	$(MAKE) peer-check
	$(GO) test -count=1 -p 3 -timeout 30m $(PKGS)

bench: build
	bash scripts/bench.sh

# The main job: the sweeper investigation's D-vs-E A/B, five trials per arm, on the
# embedded simulator (its model in virtual time: seconds, not minutes).
PROFILE ?= default
run: build
	$(BIN)/qmlsab run --arms D,E -n 5 --profile $(PROFILE)
	$(BIN)/qmlsab report --format html,json,perf,bench,md

# The model beside the investigation (table), then the ensemble: every
# setting D's and E's observations allow, F's and G's acceptance as shares of
# them (about two minutes on 2 cores; make bench times it; docs/investigations.md
# has its figures). make test runs small ensembles (sweep: TestEnsemble*,
# cmd/qmlsab: TestFit*) and a reduced single-point fit.
calibrate: build
	$(BIN)/qmlsab calibrate --arms A,D,E,M,F -n 5
	$(BIN)/qmlsab calibrate --fit --out results/fit

clean:
	rm -rf $(BIN)
