# fuse-io-uring-lab: FUSE over io_uring, taught and tested in a VM.
#
# The two commands of the README:
#   make demo    from nothing to the guest walking every lab, narrated
#   make check   build what is needed, run every test, end with "N passed, N failed"
#
# Each target is a step of one pipeline; the scripts it calls decide what is
# already up to date, so running a target twice is cheap.

SHELL := /bin/bash
TOP := $(CURDIR)
BUILD := $(TOP)/build
FLAVOR ?= normal
export FLAVOR
# Which kernel `make kernel` and vm/run take: 7.2 with the v2 series (the
# default), or 7.3, which merged the buffer pool instead (scripts/lib.sh).
# make check, make demo and the server need both: they build both.
KERNEL ?= 7.2
export KERNEL
KERNELS := 7.2 7.3

# Every step that writes build/ holds this checkout's lock: a second make
# started meanwhile waits instead of corrupting the kernel build
# (scripts/with-build-lock).
LOCKED := scripts/with-build-lock

CC := gcc
CFLAGS := -std=c11 -O2 -g -Wall -Wextra -Werror -D_GNU_SOURCE

.PHONY: help deps tree kernel kernels kernel-stock headers server peer tests vm check check-debug fresh-check demo bench costs conformance patches patches-check docs clean exercise exercises exercise-check
.DEFAULT_GOAL := help

help:
	@echo "make demo           install, build, boot the guest and walk the labs"
	@echo "make check          run every test (host, runner, guest); ends with 'N passed, N failed'"
	@echo "make check-debug    the guest suite on the debug kernel (KASAN, lockdep, kmemleak, fault injection)"
	@echo "make fresh-check    make docs and the README's two commands on a brand-new Debian 12 root (as root; $$(docs/_ext/facts.py render ~fresh-check.time 2>/dev/null || echo 'see the README'))"
	@echo "make deps           install the Debian packages and download the pinned kernel"
	@echo "make kernel         unpack + patch build/linux, build bzImage (FLAVOR=$(FLAVOR), KERNEL=$(KERNEL))"
	@echo "make kernel-stock   build stock 7.2 (no series) in build/stock/, for make check"
	@echo "make kernels        both kernels: 7.2 with the v2 series, and 7.3 as merged"
	@echo "make server         build the reference server into build/reference-server/"
	@echo "make peer           build libfuse's passthrough_hp (the peer) into build/libfuse/"
	@echo "make tests          build the small programs the guest tests run (tests/*.c) into build/tests/"
	@echo "make vm             an interactive shell in the guest"
	@echo "make patches        export build/linux's commits above base into kernel-patches/"
	@echo "make patches-check  apply, build and checkpatch the series one patch at a time"
	@echo "make docs           build the book into build/docs/ (needs both trees, not a built kernel)"
	@echo "make bench          every server configuration side by side in one boot (fio)"
	@echo "make costs          the cost table alone, on 7.2 and 7.3: copies, syscalls, CQEs per request (COSTS_SAVE=1 saves it)"
	@echo "make conformance    libfuse's syscall suite (test_syscalls) on three mounts: a table"
	@echo "make exercise LAB=NN        your copy of the server with lab NN's TODOs cut, in build/exercises/NN/"
	@echo "make exercise-check LAB=NN  check your TODOs, then run lab NN's check in the guest with your server"
	@echo "vm/run -- CMD       run one command in the guest"

deps:
	@$(LOCKED) scripts/deps

# The trees alone, each unpacked and patched, not built (what make docs
# needs: the book quotes both).
tree: deps
	@for k in $(KERNELS); do KERNEL=$$k $(LOCKED) scripts/kernel tree || exit 1; done

kernel: deps
	@$(LOCKED) scripts/kernel build

kernels: deps
	@for k in $(KERNELS); do KERNEL=$$k $(LOCKED) scripts/kernel build || exit 1; done

# Linux 7.2 without the series, the third kernel the server runs on, for
# make check (build/stock/; a warm build after the 7.2 one: see scripts/lib.sh).
kernel-stock: kernels
	@KERNEL=7.2 FLAVOR=stock $(LOCKED) scripts/kernel build

# One server binary speaks both uapis: it builds against both trees'
# headers (build/headers for v2, build/headers-7.3 for the pool).
headers: deps
	@for k in $(KERNELS); do KERNEL=$$k $(LOCKED) scripts/kernel headers || exit 1; done

# The reference server builds against the patched tree's uapi headers, and
# pool.c against 7.3's. The one-rung builds prove that a reader can copy
# fewer modes (tests/guest/26, tests/guest/7.3/26): the iovec rung needs
# nothing of the series, and builds against stock 7.2's uapi
# (build/headers-stock); so does the iovec,pool build, whose pool.c alone
# takes 7.3's.
server: headers
	@if [ -f reference-server/Makefile ]; then \
	  $(LOCKED) $(MAKE) -s -C reference-server && \
	  $(LOCKED) $(MAKE) -s -C reference-server MODES=iovec HDR=$(BUILD)/headers-stock/include \
	    O=$(BUILD)/reference-server/rungs/iovec && \
	  $(LOCKED) $(MAKE) -s -C reference-server MODES=iovec,bufring O=$(BUILD)/reference-server/rungs/bufring && \
	  $(LOCKED) $(MAKE) -s -C reference-server MODES=iovec,pool HDR=$(BUILD)/headers-stock/include \
	    O=$(BUILD)/reference-server/rungs/pool; fi

# libfuse's passthrough_hp, the peer the reference server is compared with.
peer: deps
	@$(LOCKED) scripts/peer

# Small programs the guest tests run, linked statically like the server:
# one per tests/*.c, and build/tests/uapi-errors from tests/uapi-errors/.
TEST_PROGS := $(patsubst tests/%.c,$(BUILD)/tests/%,$(wildcard tests/*.c)) \
	$(BUILD)/tests/uapi-errors
tests: $(TEST_PROGS)
# The uapi headers they build against, which `make headers` installs: on a
# fresh clone, `make tests` installs them first (one run makes all three).
$(BUILD)/headers/include/linux/fuse.h $(BUILD)/headers-7.3/include/linux/fuse.h \
		$(BUILD)/headers-stock/include/linux/fuse.h &: | deps
	@for k in $(KERNELS); do KERNEL=$$k $(LOCKED) scripts/kernel headers || exit 1; done
$(BUILD)/tests/%: tests/%.c | deps
	@mkdir -p $(@D)
	$(LOCKED) $(CC) $(CFLAGS) -static -o $@ $< -luring
# These speak the patched uapi (FUSE_URING_BUFRING), like the server.
UAPI_TESTS := $(BUILD)/tests/uapi-fuzz
$(UAPI_TESTS): CFLAGS += -I$(BUILD)/headers/include
$(UAPI_TESTS): $(BUILD)/headers/include/linux/fuse.h tests/kernel-log.h
# uapi-errors: one file per topic (tests/uapi-errors/main.c lists them);
# its objects go to build/tests/uapi-errors.obj/, beside the program.
UAPI_ERRORS_OBJS := $(patsubst tests/uapi-errors/%.c,$(BUILD)/tests/uapi-errors.obj/%.o,\
	$(wildcard tests/uapi-errors/*.c))
$(BUILD)/tests/uapi-errors.obj/%.o: tests/uapi-errors/%.c $(wildcard tests/uapi-errors/*.h) \
		tests/kernel-log.h $(BUILD)/headers/include/linux/fuse.h | deps
	@mkdir -p $(@D)
	$(LOCKED) $(CC) $(CFLAGS) -I$(BUILD)/headers/include -c -o $@ $<
$(BUILD)/tests/uapi-errors: $(UAPI_ERRORS_OBJS)
	$(LOCKED) $(CC) $(CFLAGS) -static -o $@ $^ -luring -lpthread

# The labs' exercises (scripts/exercise), cut from the reference server's
# own sources. They write only build/exercises/, so they take no lock.
# FORCE=1 starts an exercise again (deleting your copy).
exercise: headers
	@test -n "$(LAB)" || { echo "make exercise LAB=NN (labs: $$(scripts/exercise labs))" >&2; exit 2; }
	@scripts/exercise skel $(LAB) $(if $(FORCE),--force)

exercises: headers
	@for lab in $$(scripts/exercise labs); do scripts/exercise skel $$lab --keep || exit 1; done

exercise-check: headers
	@test -n "$(LAB)" || { echo "make exercise-check LAB=NN" >&2; exit 2; }
	@scripts/exercise check $(LAB)

# This one speaks Linux 7.3's pool uapi (tests/guest/7.3/22-pool-errors.sh).
$(BUILD)/tests/pool-errors: CFLAGS += -I$(BUILD)/headers-7.3/include -Itests
$(BUILD)/tests/pool-errors: $(BUILD)/headers-7.3/include/linux/fuse.h tests/unit.h

# The io_uring primer's program speaks stock 7.2's protocol only.
$(BUILD)/tests/first-request: CFLAGS += -I$(BUILD)/headers-stock/include
$(BUILD)/tests/first-request: $(BUILD)/headers-stock/include/linux/fuse.h

# The interactive guest runs outside the lock (it would hold every other
# make for as long as the shell is open); its prerequisites take it.
vm: kernel server tests
	@vm/run --interactive

check: kernels kernel-stock server peer tests
	@$(LOCKED) scripts/check

# The guest suite on the debug kernel (KASAN, lockdep, kmemleak, fault
# injection; vm/kernel-debug.config), in build/obj/debug.
check-debug:
	@$(MAKE) --no-print-directory FLAVOR=debug kernel server peer tests
	@FLAVOR=debug $(LOCKED) scripts/check

demo: kernels server tests
	@$(LOCKED) scripts/demo

# The full benchmark (not part of make check; a smoke run is).
bench: kernels server peer
	@$(LOCKED) scripts/bench

# What each request costs, counted (bench/costs), on 7.2 with the series and
# on 7.3, in two boots.
costs: kernels server peer
	@$(LOCKED) scripts/bench --costs

# libfuse's syscall suite, in full, on the reference server and on
# passthrough_hp in one boot, with a table (make check runs the same guest
# file, tests/guest/31, and counts its checks); KERNEL=7.3 runs it on 7.3,
# with pool mode (tests/guest/7.3/31).
conformance: kernel server peer
	@$(LOCKED) scripts/conformance

patches:
	@$(LOCKED) scripts/kernel export

patches-check: deps
	@$(LOCKED) scripts/kernel series-check

# The book quotes both trees' sources, so it needs them (the pinned
# sources, unpacked and patched: make tree), but no kernel build (the
# README says how long it takes on a fresh root).
docs: tree
	@$(LOCKED) sphinx-build -q -E -W -n --keep-going -b html . $(BUILD)/docs
	@echo "docs: $(BUILD)/docs/index.html"

# The README's two commands, exactly as written, on a new Debian 12 root
# made with mmdebstrap: what CI runs (.ci/run). Needs root. Not under the
# build lock: it builds in its own root, and writes only its logs here
# (build/fresh-check/).
fresh-check:
	@scripts/fresh-check

# Keeps the download and ccache cache (~/.cache/fuse-io-uring-lab), and the
# lock file, which a waiting make may hold open.
clean:
	@$(LOCKED) find $(BUILD) -mindepth 1 -maxdepth 1 ! -name .lock -exec rm -rf {} +
