# Parley: `make run` starts parleyd on its embedded defaults; `make test` runs every test.
SWIFT ?= swift
CONFIG ?= conf/parleyd.yaml
FUZZ_SECONDS ?= 600

.PHONY: run test bench fuzz deps build release adduser clean

deps:
	@scripts/install-deps.sh

build: deps
	$(SWIFT) build --product parleyd

release: deps
	$(SWIFT) build -c release --product parleyd

run: build
	.build/debug/parleyd run --config $(CONFIG)

# Create an account for `make run`'s server: make adduser USER=alice
adduser: build
	.build/debug/parleyd adduser --config $(CONFIG) $(USER)

test: deps
	$(SWIFT) build --build-tests
	# Foundation's Process.run() on Linux (Swift 6.3.1, swift-corelibs-foundation#5472) copies
	# 256 bytes of every /proc/self/fd entry and crashes when one sits at the end of a thread
	# arena's last mapped page; the test process holds thousands of descriptors. One malloc
	# arena (grown by brk with padding) leaves room after that buffer. The client suites, which
	# launch Prosody, parleyd and parley, run in a test process of their own.
	# Swift Testing starts every test at once unless told otherwise: ~800 scenarios each
	# starting a server on two cores made a stream header wait over 15 s and a login outlast
	# a 4 s idle timeout in the first half-minute. 16 at a time ran the same tests in less
	# wall time (73 s against 80 s); the client suites, which mostly wait, stay unbounded.
	SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH=16 MALLOC_ARENA_MAX=1 $(SWIFT) test --skip-build --skip ParleyClientTests
	MALLOC_ARENA_MAX=1 $(SWIFT) test --skip-build --filter ParleyClientTests
	$(SWIFT) build --product parleyd
	python3 -m pytest -q Tests/Interop

bench: deps
	$(SWIFT) build -c release --product ParleyBench
	$(SWIFT) build -c release --product parleyd
	.build/release/ParleyBench parser
	.build/release/ParleyBench archive
	bench/login.sh
	bench/messages.sh
	MODE=defaults bench/messages.sh
	bench/pep.sh
	bench/roster.sh
	bench/muc.sh
	bench/upload.sh
	bench/cluster.sh
	bench/bosh.sh
	bench/websocket.sh

fuzz: deps
	$(SWIFT) build -c release --product ParleyFuzz --scratch-path .build-fuzz \
		-Xswiftc -sanitize=fuzzer,address -Xswiftc -DFUZZING -Xswiftc -parse-as-library
	mkdir -p .build-fuzz/corpus
	.build-fuzz/release/ParleyFuzz -max_total_time=$(FUZZ_SECONDS) -timeout=10 -rss_limit_mb=2048 \
		.build-fuzz/corpus fuzz/corpus

clean:
	rm -rf .build .build-fuzz
