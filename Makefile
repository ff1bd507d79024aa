# nodewarden — one build entry point.
#
#   make            build build/nodewarden
#   make test       unit tests, unit tests under ASan+UBSan, fuzz corpus replay,
#                   simulator self-tests, end-to-end tests
#   make run        build, start the cluster simulator and nodewarden, play the demo
#   make k8s-bins   build the pinned Kubernetes components (tests/k8s/versions) into
#                   the cache outside the clone (tests/k8s/build; done by make test)
#   make kubelet-test   the kubelet tier alone: the chart's pods from the release's image
#                   under a real kubelet, containerd and kube-proxy, and the upgrade from
#                   the previous tagged release (tests/kubelet)
#   make aws-models fetch the pinned AWS API models (tests/awskit/versions) with curl into
#                   the cache outside the clone (tests/awskit/fetch-models; done by make test)
#   make deps       install the Debian packages that are missing (apt-get)
#   make fuzz       build libFuzzer targets with clang and run each FUZZ_SECONDS
#   make bench      benchmarks (bench/*/run, bench-race among them, bench-peers, bench/cluster/real)
#   make bench-peers   Karpenter's own scheduler and nodewarden's on identical inputs
#                   (bench/peers/karpenter; Karpenter built from the Go module proxy)
#   make bench-race    Karpenter itself (its KWOK provider) and nodewarden on one real control
#                   plane over the scale-out shapes (bench/race; Karpenter built from the Go
#                   module proxy)
#   make bench-cluster   the cluster-scale benchmark alone (bench/cluster/run, docs/benchmarks.md)
#   make bench-cluster-real   its real tier: kube-apiserver, etcd and kwok, and the stand-in
#                   at the same size (bench/cluster/real)
#   make certs      development CA + serving certificate in certs/dev/
#   make sim        start the cluster simulator in the foreground
#   make crash-campaign   the long crash campaign on the real tier: 200 kill -9 points
#                   (tests/cluster/crash; NW_CRASH_SEED replays, CRASH_POINTS sizes it)
#   make cluster    a real control plane with nodewarden installed by Helm, in the foreground
#   make image      container image (Dockerfile) where a Docker engine is available
#   make release    the release: amd64+arm64 OCI image index built from Debian packages
#                   without a daemon, the chart pinned to its digest, CRDs, SBOMs,
#                   SHA256SUMS in build/release/<VERSION>/ (docs/release.md)
#   make release-check   two release builds in two directories, compared byte for byte
#   make fmt / lint / clean   (lint-layers: the layer check alone)
#
# Sources are discovered: every .c under the layer folders (SRC_DIRS, any depth;
# docs/internals/layout.md) is part of the program, cli/main.c is its main;
# tests/unit/test_<name>.c must export `Suite *nw_<name>_suite(void)`;
# tests/fuzz/fuzz_<name>.c is a libFuzzer target; tests/e2e/t_* are end-to-end
# tests (executables run from the project root); tests/sim/test_*.py are the
# simulator's own tests; bench/<name>/run are benchmarks.

SHELL := /bin/bash
.DEFAULT_GOAL := all

CC ?= cc
BUILD ?= build
SAN ?=
VERSION := $(shell cat VERSION 2>/dev/null || echo 0.0.0)
GIT_REV := $(shell git rev-parse --short HEAD 2>/dev/null || echo unknown)

# Debian packages the build, the tests, the tools and the benchmarks need: the C
# build and its libraries; clang, libFuzzer and the sanitizer runtimes (make fuzz);
# cppcheck and clang-format (make lint/fmt); python3 and openssl (the simulator,
# the tests, certificates; python3-yaml for the CRD oracle); wrk, nginx-light, curl and valgrind (bench), coinor-cbc (the MILP solver of bench/cost); git (version stamp,
# the fresh-root check), ca-certificates (the Go module proxy over HTTPS), iproute2
# (network namespaces of the real-cluster tests), procps, and debootstrap
# (tests/fresh/run); containerd, runc, containernetworking-plugins (bridge, host-local,
# loopback, portmap) and iptables: the container runtime of the kubelet tier
# (tests/kubelet: the chart's pods under a real kubelet). Go itself is part of this machine kind (/usr/local/go); the
# Kubernetes components are built from source by tests/k8s/build, not installed.
LIB_DEV_PKGS := libmicrohttpd-dev libgnutls28-dev libssl-dev libcjson-dev libcurl4-openssl-dev \
                libyaml-dev libxml2-dev
DEB_PKGS := build-essential pkg-config $(LIB_DEV_PKGS) check clang libfuzzer-14-dev \
            libclang-rt-14-dev cppcheck clang-format openssl python3 wrk nginx-light curl \
            git ca-certificates iproute2 procps debootstrap valgrind python3-yaml coinor-cbc \
            prometheus containerd runc containernetworking-plugins iptables
PKGS := libmicrohttpd gnutls openssl libcjson libcurl yaml-0.1 libxml-2.0
# `make release` needs more (make release-deps, which first adds the arm64 architecture
# to dpkg and runs apt-get update): Debian's aarch64 cross compiler and the arm64 -dev
# packages of the libraries (multiarch: installing them moves the amd64 packages of the
# same libraries to the same version, a security update at most), skopeo and umoci
# (the release's checks read the image with them) and qemu-user-static (the arm64
# binary runs under it there). Kept out of DEB_PKGS so that make test and make run
# do not add an architecture and ~100 packages to every machine.
RELEASE_DEB_PKGS := gcc-aarch64-linux-gnu libc6-dev:arm64 $(LIB_DEV_PKGS:%=%:arm64) skopeo umoci \
                    qemu-user-static

# The compiler and linker flags come from pkg-config, which can answer only after
# `make deps` installed the -dev packages: every variable that holds them is
# recursive (=) and only recipes expand them, so nothing is asked before the
# $(DEPS_STAMP) prerequisite ran; `once` then keeps the first answer, so
# pkg-config runs once per make, not once per compile.
once = $(eval $(1) := $$(shell $(2)))$($(1))
PKG_CFLAGS = $(call once,PKG_CFLAGS,pkg-config --cflags $(PKGS))
PKG_LIBS = $(call once,PKG_LIBS,pkg-config --libs $(PKGS))
CHECK_CFLAGS = $(call once,CHECK_CFLAGS,pkg-config --cflags check)
CHECK_LIBS = $(call once,CHECK_LIBS,pkg-config --libs check)

WARN := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
        -Wno-unused-parameter -Wformat=2 -Wvla
CFLAGS ?= -O2 -g
ALL_CFLAGS = -std=c11 -D_GNU_SOURCE $(WARN) $(CFLAGS) $(SAN) -I. -I$(BUILD)/gen \
              -DNW_VERSION='"$(VERSION)"' -DNW_GIT_REV='"$(GIT_REV)"' $(PKG_CFLAGS)
LDLIBS = $(PKG_LIBS) -lpthread -lm

# the layer folders, bottom up (docs/internals/layout.md, tools/check_layers.py)
SRC_DIRS := common api config admission scaler server cli
LIB_SRCS := $(filter-out cli/main.c,$(sort $(shell find $(SRC_DIRS) -name '*.c' 2>/dev/null)))
LIB_OBJS := $(LIB_SRCS:%.c=$(BUILD)/obj/%.o)
MAIN_OBJ := $(BUILD)/obj/cli/main.o
UNIT_SRCS := $(sort $(wildcard tests/unit/*.c))
UNIT_OBJS := $(UNIT_SRCS:%.c=$(BUILD)/obj/%.o)
UNIT_SUITES := $(patsubst tests/unit/test_%.c,%,$(filter tests/unit/test_%.c,$(UNIT_SRCS)))
FUZZ_SRCS := $(sort $(wildcard tests/fuzz/fuzz_*.c))
FUZZ_NAMES := $(patsubst tests/fuzz/fuzz_%.c,%,$(FUZZ_SRCS))
# embedded data files (data/*.json etc.) compiled into the binary
EMBED_SRCS := $(sort $(wildcard data/*))
EMBED_OBJS := $(EMBED_SRCS:%=$(BUILD)/obj/embed/%.o)

DEPS_STAMP := build/.deps-ok
RELEASE_DEPS_STAMP := build/.release-deps-ok

.PHONY: all deps fmt-check k8s-bins k8s-kubectl k8s-kwok k8s-node kubelet-test aws-models k8s-test test test-bins unit unit-asan unit-asan-nofork unit-asan-fork unit-tsan fuzz-replay sim-test e2e fuzz bench bench-peers bench-race bench-cluster bench-cluster-real crash-campaign certs sim cluster run \
        fmt lint lint-layers clean help image release release-deps release-check

all: $(BUILD)/nodewarden

help:
	@sed -n '2,29p' Makefile

# ---- dependencies -----------------------------------------------------------
# Installs only what is missing; a stamp keeps repeated builds from calling dpkg.
deps: $(DEPS_STAMP)
release-deps: $(RELEASE_DEPS_STAMP)
$(DEPS_STAMP): private INSTALL_PKGS = $(DEB_PKGS)
$(RELEASE_DEPS_STAMP): private INSTALL_PKGS = $(RELEASE_DEB_PKGS)
$(RELEASE_DEPS_STAMP): | $(DEPS_STAMP)
$(DEPS_STAMP) $(RELEASE_DEPS_STAMP): Makefile
	@SUDO=""; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
	if [ "$@" = "$(RELEASE_DEPS_STAMP)" ] && ! dpkg --print-foreign-architectures | grep -qx arm64; then \
	  echo "deps: adding the arm64 architecture to dpkg (the release's cross build)"; \
	  $$SUDO dpkg --add-architecture arm64 && $$SUDO apt-get update -q || exit 1; \
	fi
	@missing=""; for p in $(INSTALL_PKGS); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "deps: installing$$missing"; \
	  SUDO=""; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
	  $$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $$missing \
	  || { $$SUDO apt-get update -q && $$SUDO env DEBIAN_FRONTEND=noninteractive \
	       apt-get install -y -q --no-install-recommends $$missing; } || exit 1; \
	fi
	@mkdir -p build && touch $@

# ---- the real Kubernetes components (test tooling) ----------------------------
# tests/k8s/build builds kube-apiserver, kube-controller-manager, kube-scheduler,
# kubectl, etcd and helm at the versions in tests/k8s/versions into a cache outside
# the clone (NW_K8S_CACHE, default ~/.cache/nodewarden/k8s/<key>/bin); it returns at
# once when they are built. K8S_BIN is that directory; test jobs and `make run` get
# it as NW_K8S_BIN and first on their PATH, so `kubectl` is always the pinned one.
K8S_BIN = $(call once,K8S_BIN,tests/k8s/build --print-bin)
K8S_ENV = NW_K8S_BIN='$(K8S_BIN)' PATH='$(K8S_BIN)':"$$PATH"
k8s-bins: $(DEPS_STAMP)
	@tests/k8s/build
k8s-kubectl: $(DEPS_STAMP)
	@tests/k8s/build kubectl
# kwok (sigs.k8s.io/kwok at KWOK_VERSION, under a cache key of its own): only the
# cluster-scale benchmark's real tier (bench/cluster/real) runs it
k8s-kwok: $(DEPS_STAMP)
	@tests/k8s/build kwok
# the kubelet and kube-proxy (k8s.io/kubernetes at K8S_VERSION, under a cache key of
# their own: tests/k8s/node/): the kubelet tier (tests/kubelet) runs them
K8S_NODE_BIN = $(call once,K8S_NODE_BIN,tests/k8s/build --print-bin node)
k8s-node: $(DEPS_STAMP)
	@tests/k8s/build node

# ---- AWS's API models (test tooling) -----------------------------------------------
# tests/awskit/fetch-models fetches the npm package aws-sdk at the version and sha512 in
# tests/awskit/versions with curl from the npm registry, once, into a cache outside the clone (NW_AWS_MODELS_CACHE,
# default ~/.cache/nodewarden/npm/aws-sdk-<version>/apis); the job awskit checks every
# action of the AWS setup kit (manifests/aws/) against them.
aws-models: $(DEPS_STAMP)
	@tests/awskit/fetch-models

# ---- the program --------------------------------------------------------------
$(BUILD)/gen/suites.h: $(UNIT_SRCS) | $(DEPS_STAMP)
	@mkdir -p $(@D)
	@{ for s in $(UNIT_SUITES); do echo "NW_SUITE($$s)"; done; } > $@.tmp
	@cmp -s $@.tmp $@ 2>/dev/null || mv $@.tmp $@; rm -f $@.tmp

$(BUILD)/obj/%.o: %.c | $(DEPS_STAMP)
	@mkdir -p $(@D)
	@echo "CC $<"
	@$(CC) $(ALL_CFLAGS) $(CHECK_CFLAGS) -MMD -MP -c $< -o $@

# data/<file> -> object with symbols nw_embed_<file>_start/_end (see common/embed.h)
$(BUILD)/obj/embed/data/%.o: data/% | $(DEPS_STAMP)
	@mkdir -p $(@D)
	@sym=$$(echo '$*' | tr -c 'A-Za-z0-9\n' '_'); \
	printf '.section .rodata\n.global nw_embed_%s_start\n.global nw_embed_%s_end\n.balign 16\nnw_embed_%s_start:\n.incbin "%s"\nnw_embed_%s_end:\n.byte 0\n.section .note.GNU-stack,"",@progbits\n' \
	  $$sym $$sym $$sym '$<' $$sym > $@.s; \
	$(CC) -c $@.s -o $@

$(BUILD)/nodewarden: $(MAIN_OBJ) $(LIB_OBJS) $(EMBED_OBJS)
	@echo "LD $@"
	@$(CC) $(ALL_CFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/obj/tests/unit/main.o: $(BUILD)/gen/suites.h
# the version and the commit are compiled in (cli/main.c's --version, scaler/kube/client.c's
# User-Agent): a new VERSION or a new commit rebuilds them. The commit's stamp file is
# rewritten only when HEAD moved, so an unchanged tree rebuilds nothing.
GIT_REV_STAMP := $(BUILD)/gen/git-rev
$(shell mkdir -p $(BUILD)/gen && { [ "$$(cat $(GIT_REV_STAMP) 2>/dev/null)" = "$(GIT_REV)" ] || echo "$(GIT_REV)" > $(GIT_REV_STAMP); })
$(MAIN_OBJ) $(BUILD)/obj/scaler/kube/client.o: VERSION $(GIT_REV_STAMP)

$(BUILD)/nw-unit: $(UNIT_OBJS) $(LIB_OBJS) $(EMBED_OBJS)
	@echo "LD $@"
	@$(CC) $(ALL_CFLAGS) -o $@ $^ $(CHECK_LIBS) $(LDLIBS)

# fuzz targets built as plain programs that replay files (tests/fuzz/replay.c)
$(BUILD)/fuzz-replay/%: tests/fuzz/fuzz_%.c tests/fuzz/replay.c $(LIB_OBJS) $(EMBED_OBJS)
	@mkdir -p $(@D)
	@echo "LD $@"
	@$(CC) $(ALL_CFLAGS) -o $@ $^ $(LDLIBS)

# the requirement checks in a loop (bench/requirements/run)
$(BUILD)/bench/requirements: bench/requirements/bench.c $(LIB_OBJS) $(EMBED_OBJS)
	@mkdir -p $(@D)
	@echo "LD $@"
	@$(CC) $(ALL_CFLAGS) -o $@ $^ $(LDLIBS)

# one cost scenario through the simulation, and the types a model may use (bench/cost/run)
$(BUILD)/bench/cost: bench/cost/cost.c $(LIB_OBJS) $(EMBED_OBJS)
	@mkdir -p $(@D)
	@echo "LD $@"
	@$(CC) $(ALL_CFLAGS) -o $@ $^ $(LDLIBS)

# nodewarden's side of the race against Karpenter's scheduler (bench/peers/karpenter/run):
# a case file in, the solve's result out; the embedded catalog as a case's instance types
$(BUILD)/bench/nwrace: bench/peers/karpenter/nwrace.c $(LIB_OBJS) $(EMBED_OBJS)
	@mkdir -p $(@D)
	@echo "LD $@"
	@$(CC) $(ALL_CFLAGS) -o $@ $^ $(LDLIBS)

# the admission path in a loop, for callgrind's instruction counts (bench/webhook/run)
$(BUILD)/bench/webhook-instr: bench/webhook/instr.c $(LIB_OBJS) $(EMBED_OBJS)
	@mkdir -p $(@D)
	@echo "LD $@"
	@$(CC) $(ALL_CFLAGS) -o $@ $^ $(LDLIBS)

-include $(shell find $(BUILD)/obj -name '*.d' 2>/dev/null)

# ---- tests --------------------------------------------------------------------
SAN_FLAGS := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
export ASAN_OPTIONS ?= detect_leaks=1:abort_on_error=0:halt_on_error=1:strict_string_checks=1
export UBSAN_OPTIONS ?= print_stacktrace=1:halt_on_error=1

# `make test` builds everything first (both builds, in parallel on the machine's
# cores), then runs every test job through tests/runjobs.py, NW_TEST_JOBS (default 5)
# at a time: the unit tests, the ASan+UBSan unit tests, the fuzz corpus replay, each
# simulator test module and each end-to-end test are separate jobs, each with its
# own log in build/test-logs/ (printed when it fails). The end-to-end tests mostly
# wait on timers and sockets, so running them side by side with the CPU-bound jobs
# cuts the wall time to about a third; every job uses its own temporary directory
# and free ports. `make unit`, `make unit-asan`, `make fuzz-replay`, `make sim-test`
# and `make e2e` still run one phase.
NPROC := $(shell nproc 2>/dev/null || echo 2)
# ThreadSanitizer: the suites whose tests run threads against the watch cache, the watch
# and leader threads of the Kubernetes client, and the controllers' launch workers
# (`make unit-tsan`; a make test job). Any data race report fails the run.
# The sanitizer builds keep line tables only (-g1: file and line in every report, no
# variable info), which cuts their compile time by about a quarter inside make test.
TSAN_MAKE := $(MAKE) --no-print-directory BUILD=build/tsan SAN="-fsanitize=thread -fno-omit-frame-pointer" CFLAGS="-O1 -g1"
TSAN_SUITES := kube_cache kube_client controllers pod statemetrics workers
export TSAN_OPTIONS ?= halt_on_error=1:second_deadlock_stack=1
ASAN_MAKE := $(MAKE) --no-print-directory BUILD=build/asan SAN="$(SAN_FLAGS)" CFLAGS="-O1 -g1"
RUNJOBS := python3 tests/runjobs.py --logdir $(BUILD)/test-logs
# make test builds the sanitizer binaries inside the jobs that need them, so the other jobs
# (which mostly wait on timers and sockets) run beside the build instead of after it; the
# first job to get the lock builds, the others find the binaries made
ASAN_BINS := mkdir -p build/asan && flock build/asan/.build.lock $(ASAN_MAKE) -j$(NPROC) test-bins
E2E_TESTS = $(shell find tests/e2e -maxdepth 1 -name 't_*' -type f -perm -u+x | sort)
SIM_TESTS = $(sort $(wildcard tests/sim/test_*.py))
E2E_JOBS = $(foreach t,$(E2E_TESTS),e2e/$(notdir $(t))='NW_BIN=$(abspath $(BUILD)/nodewarden) exec $(t)')
K8S_TESTS = $(sort $(wildcard tests/k8s/test_*.py))
K8S_JOBS = $(foreach t,$(K8S_TESTS),k8s/$(basename $(notdir $(t)))='NW_BIN=$(abspath $(BUILD)/nodewarden) exec python3 -m unittest discover -s tests/k8s -p $(notdir $(t)) -t .')
# the real-cluster tier (tests/cluster, docs/testing-real-cluster.md): its own stories and
# harness stories of tests/e2e run unchanged on the real backend; they need tests/k8s
# (the pinned Kubernetes components)
K8S_IN := $(wildcard tests/k8s/controlplane.py)
REAL_TESTS = $(if $(K8S_IN),$(shell find tests/cluster -maxdepth 1 -name 't_*' -type f -perm -u+x | sort))
# harness stories run on the real backend too; t_term_delete, t_provision_ice,
# t_provision_limits, t_disrupt_gpu and t_provision_shared_gpu pass there as well but stay
# out of make test for its budget (tests/cluster/t_real_dra covers the GPU nodes' life on
# the real tier; docs/testing-real-cluster.md says why these and how to run them)
REAL_STORIES := $(if $(K8S_IN),t_interrupt t_term_pdb t_term_tgp t_term_delete_node t_drift_expiry \
                t_bootstrap_kubeadm t_provision_topology t_ipv6 t_service_cidr)
REAL_JOBS = $(foreach t,$(REAL_TESTS),e2e-real/$(notdir $(t))='NW_BIN=$(abspath $(BUILD)/nodewarden) exec $(t)') \
            $(foreach t,$(REAL_STORIES),e2e-real/$(t)='NW_BIN=$(abspath $(BUILD)/nodewarden) NW_E2E_BACKEND=real exec tests/e2e/$(t)')
# docs/install.md's command blocks run in order on the real tier, AWS on the simulator
# (tests/install/test_walkthrough.py; docs/testing.md "The install walkthrough")
INSTALL_JOBS = $(if $(K8S_IN),install/walkthrough='NW_BIN=$(abspath $(BUILD)/nodewarden) exec python3 -m unittest tests.install.test_walkthrough')
# the kubelet tier (tests/kubelet, docs/testing-kubelet.md): the chart's two pods run from
# the release's image under a real kubelet, containerd and kube-proxy (t_release_pod), and
# the upgrade from the previous tagged release (t_upgrade); root only. In tests/fresh/run's
# chroot too: the node's mount namespace takes the chroot as its root (tests/kubelet/node.py)
KUBELET_TESTS = $(if $(K8S_IN),$(shell find tests/kubelet -maxdepth 1 -name 't_*' -type f -perm -u+x | sort))
KUBELET_JOBS = $(foreach t,$(KUBELET_TESTS),kubelet/$(notdir $(t))='NW_BIN=$(abspath $(BUILD)/nodewarden) NW_K8S_NODE_BIN=$(K8S_NODE_BIN) exec $(t)')
# the previous release of kubelet/t_upgrade, built from its tag (or tools/release/tags) once per machine and
# cached (tests/kubelet/releases.py) before the jobs start, so its compile is not part of
# the job; a failure here (no tag in a shallow clone) is the job's to report
PREV_RELEASE = $(if $(KUBELET_TESTS),$(K8S_ENV) python3 tests/kubelet/releases.py previous >/dev/null || \
  echo "make test: the previous release was not built; kubelet/t_upgrade will say why")
SIM_JOBS = $(foreach t,$(SIM_TESTS),sim/$(basename $(notdir $(t)))='NW_BIN=$(abspath $(BUILD)/nodewarden) exec python3 -m unittest discover -s tests/sim -p $(notdir $(t)) -t .')

# Karpenter's CRDs as the oracle (docs/admission-oracle.md): our CRDs against Karpenter's
# field by field, and every admission case against kube-apiserver with each set (that
# one needs the pinned control plane of tests/k8s/)
ORACLE_JOBS = oracle/parity='python3 -m tests.oracle.parity && python3 -m unittest tests.oracle.test_parity' \
  $(if $(wildcard tests/k8s/controlplane.py),oracle/admission='NW_BIN=$(abspath $(BUILD)/nodewarden) python3 -m tests.oracle.oracle')

test: $(DEPS_STAMP)
	@$(MAKE) --no-print-directory -j$(NPROC) all $(BUILD)/nw-unit
	@tests/k8s/build
	@tests/k8s/build node
	@$(PREV_RELEASE)
	@bench/peers/karpenter/build
	@tests/awskit/fetch-models >/dev/null
	@$(K8S_ENV) $(RUNJOBS) --title "make test" \
	  unit='$(MAKE) --no-print-directory unit' \
	  unit-asan='$(ASAN_BINS) && $(MAKE) --no-print-directory unit-asan-nofork' \
	  unit-asan-threads='$(ASAN_BINS) && $(MAKE) --no-print-directory unit-asan-fork' \
	  unit-tsan='$(MAKE) --no-print-directory unit-tsan' \
	  fuzz-replay='$(ASAN_BINS) && $(MAKE) --no-print-directory fuzz-replay' \
	  citations='tools/check_citations.sh --self-test && tools/check_citations.sh' \
	  docs='NW_BIN=$(abspath $(BUILD)/nodewarden) python3 tools/check_docs.py --self-test && NW_BIN=$(abspath $(BUILD)/nodewarden) python3 tools/check_docs.py' \
	  layers='$(MAKE) --no-print-directory lint-layers' \
	  mustuse='tools/check_mustuse.sh --self-test && tools/check_mustuse.sh' \
	  funcs='python3 tools/check_funcs.py --self-test && python3 tools/check_funcs.py' \
	  fmt='$(MAKE) --no-print-directory fmt-check' \
	  awskit='tests/awskit/fetch-models >/dev/null && NW_BIN=$(abspath $(BUILD)/nodewarden) python3 -m unittest tests.awskit.test_kit tests.awskit.test_coverage' \
	  release='NW_BIN=$(abspath $(BUILD)/nodewarden) tests/release/smoke' \
	  cluster='bench/cluster/build --test >/dev/null && NW_BIN=$(abspath $(BUILD)/nodewarden) CLUSTER_TEST=1 bench/cluster/run' \
	  peers/karpenter='$(ASAN_BINS) && NW_RACE_BIN=$(abspath build/asan/bench/nwrace) python3 -m unittest tests.peers.test_karpenter' \
	  $(KUBELET_JOBS) $(K8S_JOBS) $(ORACLE_JOBS) $(SIM_JOBS) $(E2E_JOBS) $(REAL_JOBS) $(INSTALL_JOBS)
	@echo "make test: all passed"

# the test programs of one build (used for the ASan build by `make test`)
test-bins: $(BUILD)/nw-unit $(FUZZ_NAMES:%=$(BUILD)/fuzz-replay/%) $(BUILD)/bench/nwrace
	@:

unit: $(BUILD)/nw-unit
	@echo "== unit tests ($(BUILD))"
	@set -o pipefail; $(BUILD)/nw-unit $(UNIT_SUITES_RUN) 2>&1 | tee $(UNIT_LOG); rc=$$?; \
	if grep -qE 'ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:' $(UNIT_LOG); then \
	  echo "sanitizer report in unit tests"; exit 1; fi; exit $$rc

# Under ASan most suites run in one process (CK_FORK=no): forking for every test and
# a LeakSanitizer pass in every child made this run ~7x slower; leaks are still
# reported (once, at exit) and any sanitizer report fails the run. Suites whose tests
# start threads, servers or wait (their test file mentions pthread, fake_srv, sleeps or
# a _start( call) keep a fork per test, so a failing assertion cannot leave a thread
# running into the next test, and Check's per-test timeout holds. That timeout is
# a guard against hangs; under ASan each forked child also runs LeakSanitizer as it
# exits, which on a loaded machine took a trivial parser test past Check's default 4 s,
# so the forked suites get 4x the time. A longer tcase_set_timeout alone (the scheduler's
# case tables, the expression fuzzing of kre, the controller suites on a fake clock) does
# not make a suite forked: those start no thread and wait for nothing, and the child's
# LeakSanitizer pass per test was most of unit-asan-threads' time (about 170 s of 325 s
# on a loaded machine, for 236 tests that take 60 s in one process).
FORK_RE := pthread|fake_srv|usleep|nanosleep|sleep_ms|_start[(]
FORK_SUITES = $(patsubst tests/unit/test_%.c,%,$(shell grep -l -E '$(FORK_RE)' tests/unit/test_*.c))
UNIT_LOG ?= $(BUILD)/unit.log
unit-tsan:
	@$(TSAN_MAKE) -j$(NPROC) build/tsan/nw-unit
	@$(TSAN_MAKE) UNIT_SUITES_RUN="$(TSAN_SUITES)" UNIT_LOG=build/tsan/unit.log unit
	@if grep -q "WARNING: ThreadSanitizer" build/tsan/unit.log; then \
	  echo "ThreadSanitizer report in unit-tsan"; exit 1; fi

unit-asan: unit-asan-nofork unit-asan-fork
unit-asan-nofork:
	@CK_FORK=no $(ASAN_MAKE) UNIT_SUITES_RUN="$(filter-out $(FORK_SUITES),$(UNIT_SUITES))" \
	  UNIT_LOG=build/asan/unit-nofork.log unit
unit-asan-fork:
	@CK_TIMEOUT_MULTIPLIER=4 $(ASAN_MAKE) UNIT_SUITES_RUN="$(FORK_SUITES)" UNIT_LOG=build/asan/unit-fork.log unit

fuzz-replay:
	@$(ASAN_MAKE) fuzz-replay-run

fuzz-replay-run: $(FUZZ_NAMES:%=$(BUILD)/fuzz-replay/%)
	@echo "== fuzz corpus replay ($(words $(FUZZ_NAMES)) targets)"
	@for n in $(FUZZ_NAMES); do \
	  files=$$(find tests/fuzz/corpus/$$n -type f 2>/dev/null | sort); \
	  [ -n "$$files" ] || { echo "fuzz-replay: no corpus for $$n"; exit 1; }; \
	  printf '%s: ' $$n; echo "$$files" | xargs $(BUILD)/fuzz-replay/$$n || exit 1; \
	done

sim-test: $(BUILD)/nodewarden k8s-kubectl
	@$(K8S_ENV) $(RUNJOBS) --title "simulator tests" $(SIM_JOBS)

e2e: $(BUILD)/nodewarden k8s-bins
	@$(K8S_ENV) $(RUNJOBS) --title "end-to-end tests" $(E2E_JOBS)

k8s-test: $(BUILD)/nodewarden k8s-bins
	@$(K8S_ENV) $(RUNJOBS) --title "real control plane tests" $(K8S_JOBS)

kubelet-test: $(BUILD)/nodewarden k8s-bins k8s-node
	@$(PREV_RELEASE)
	@$(K8S_ENV) $(RUNJOBS) --title "kubelet tier" $(KUBELET_JOBS)

# ---- fuzzing with libFuzzer (clang) ------------------------------------------
# The product's sources are compiled once with the fuzzer's coverage and the sanitizers
# (build/fuzz/obj), then each target is linked against them with libFuzzer's main.
FUZZ_SECONDS ?= 60
FUZZ_CFLAGS = -std=c11 -D_GNU_SOURCE -O1 -g -I. -Ibuild/fuzz/gen \
               -fsanitize=fuzzer-no-link,address,undefined -DNW_VERSION='"$(VERSION)"' \
               -DNW_GIT_REV='"$(GIT_REV)"' $(PKG_CFLAGS)
FUZZ_OBJS := $(LIB_SRCS:%.c=build/fuzz/obj/%.o)
build/fuzz/obj/%.o: %.c | $(DEPS_STAMP)
	@mkdir -p $(@D)
	@echo "CC (fuzz) $<"
	@clang $(FUZZ_CFLAGS) -MMD -MP -c $< -o $@
-include $(shell find build/fuzz/obj -name '*.d' 2>/dev/null)
fuzz: $(DEPS_STAMP) $(FUZZ_OBJS) $(EMBED_OBJS)
	@mkdir -p build/fuzz
	@for n in $(FUZZ_NAMES); do \
	  echo "== fuzz $$n ($(FUZZ_SECONDS)s)"; \
	  clang $(FUZZ_CFLAGS) -fsanitize=fuzzer -o build/fuzz/$$n tests/fuzz/fuzz_$$n.c \
	    $(FUZZ_OBJS) $(EMBED_OBJS) $(LDLIBS) || exit 1; \
	  mkdir -p tests/fuzz/corpus/$$n build/fuzz/new-$$n; \
	  build/fuzz/$$n -max_total_time=$(FUZZ_SECONDS) -max_len=65536 \
	    build/fuzz/new-$$n tests/fuzz/corpus/$$n || exit 1; \
	  build/fuzz/$$n -merge=1 tests/fuzz/corpus/$$n build/fuzz/new-$$n >/dev/null 2>&1; \
	done

# ---- other entry points --------------------------------------------------------
# the scale-out bench runs the simulator, whose RBAC loader needs the pinned kubectl; the
# cluster benchmark's real tier (bench/cluster/real) the control plane and kwok
bench: $(BUILD)/nodewarden k8s-bins k8s-kwok
	@for b in bench/*/run; do [ -x $$b ] && { echo "== $$b"; $(K8S_ENV) $$b || exit 1; }; done; true
	@echo "== bench/peers/karpenter"; $(MAKE) --no-print-directory bench-peers
	@echo "== bench/cluster/real"; $(K8S_ENV) bench/cluster/real

# Karpenter's own scheduler (its scheduling benchmark, built at KARPENTER_CORE_VERSION by
# bench/peers/karpenter/build into ~/.cache/nodewarden/peers) and nodewarden's, on the same
# pods, instance types and prices: Karpenter's benchmark mix and the scale-out shapes over
# the catalog (bench/peers/karpenter/run; PEERS_SIZES, PEERS_SHAPES pick the cases)
bench-peers: $(BUILD)/bench/nwrace
	@bench/peers/karpenter/build
	@bench/peers/karpenter/run

# Karpenter itself (sigs.k8s.io/karpenter/kwok at KARPENTER_CORE_VERSION, built by
# bench/race/build into ~/.cache/nodewarden/peers) and nodewarden, one after the other on one
# real control plane with kwok, over bench/scaleout's shapes (bench/race/run; RACE_SHAPES,
# RACE_REPLICAS pick them). make bench runs it as one of bench/*/run.
bench-race: $(BUILD)/nodewarden k8s-bins k8s-kwok
	@bench/race/build
	@$(K8S_ENV) bench/race/run

# the cluster-scale benchmark alone (bench/cluster/run; CLUSTER_CONFIGS picks the sizes)
bench-cluster: $(BUILD)/nodewarden
	@bench/cluster/run

# its real tier: 1,000 nodes and 20,000 pods on kube-apiserver, etcd and kwok, then the
# stand-in at the same size (bench/cluster/real; REAL_CONFIGS picks the sizes)
bench-cluster-real: $(BUILD)/nodewarden k8s-bins k8s-kwok
	@$(K8S_ENV) bench/cluster/real

# the long crash campaign (docs/robustness.md): 200 kill -9 points over every phase on the
# real tier (make test runs 30 of them as e2e-real/t_real_crash); NW_CRASH_SEED=<seed>
# replays a run, CRASH_POINTS changes its size; the numbers go to build/crash-campaign.json
CRASH_POINTS ?= 200
crash-campaign: $(BUILD)/nodewarden k8s-bins
	@$(K8S_ENV) NW_BIN=$(abspath $(BUILD)/nodewarden) tests/cluster/crash --points $(CRASH_POINTS) \
	  --json $(BUILD)/crash-campaign.json

certs: $(DEPS_STAMP)
	@certs/gen-dev-certs.sh certs/dev

sim: $(BUILD)/nodewarden
	@python3 tests/sim/sim.py --dir build/sim

# the real control plane with nodewarden installed by Helm (docs/testing-real-cluster.md)
cluster: $(BUILD)/nodewarden k8s-bins
	@$(K8S_ENV) python3 tests/cluster/realcluster.py --dir build/cluster

# ---- the release (docs/release.md) ---------------------------------------------------
# tools/release/build: from the committed tree, nodewarden for amd64 and arm64 (Debian's
# cross compiler), the OCI image index over both images (tools/release/image.py: a root of
# the Debian packages of the libraries the binary links, no daemon, no registry), the chart
# pinned to the index's digest (helm package), the CRDs, an SPDX SBOM per architecture and
# SHA256SUMS in build/release/<VERSION>/, then tools/release/verify. ALLOW_DIRTY=1 builds a
# tree with uncommitted changes (version <VERSION>-dirty). release-check builds twice, the
# second time in a fresh clone elsewhere, and compares every file.
release: $(DEPS_STAMP) $(RELEASE_DEPS_STAMP)
	@tests/k8s/build helm
	@$(K8S_ENV) ALLOW_DIRTY='$(ALLOW_DIRTY)' tools/release/build

release-check: $(DEPS_STAMP) $(RELEASE_DEPS_STAMP)
	@tests/k8s/build helm
	@$(K8S_ENV) ALLOW_DIRTY='$(ALLOW_DIRTY)' tests/release/check

# IMAGE=registry/nodewarden:tag to name it; needs the docker CLI and a running engine.
# The same image as make release's (Dockerfile: the same binary flags, the same
# tools/release/image.py root), for one architecture, with Docker's layer digests.
IMAGE ?= nodewarden:$(VERSION)
image:
	@command -v docker >/dev/null 2>&1 || { echo "make image: the docker CLI is not installed;" \
	  "install Docker (or build the Dockerfile with another OCI builder, e.g." \
	  "'buildah bud -t $(IMAGE) .')" >&2; exit 1; }
	@docker info >/dev/null 2>&1 || { echo "make image: no Docker engine is reachable" \
	  "('docker info' failed); start dockerd or set DOCKER_HOST" >&2; exit 1; }
	docker build --build-arg VERSION=$(VERSION) --build-arg REVISION=$$(git rev-parse HEAD) \
	  --build-arg SOURCE_DATE_EPOCH=$$(git log -1 --format=%ct) -t $(IMAGE) .
	@echo "image: built $(IMAGE)"

# make run CLUSTER=real: the same demo on the real control plane (tests/cluster)
run: $(BUILD)/nodewarden k8s-kubectl $(if $(filter real,$(CLUSTER)),k8s-bins)
	@CLUSTER=$(CLUSTER) $(K8S_ENV) python3 tests/run-demo.py

# every tracked C file formatted as .clang-format says (make fmt rewrites; fmt-check,
# part of make lint and the make test job 'fmt', fails naming the files that differ)
fmt:
	@clang-format -i $$(git ls-files '*.c' '*.h')

fmt-check:
	@command -v clang-format >/dev/null || { echo "fmt-check: clang-format is not installed (make deps)"; exit 1; }
	@clang-format --dry-run --Werror $$(git ls-files '*.c' '*.h') 2>&1 | grep -E '^[^ ]+: error' \
	  | sed 's/:[0-9]*:[0-9]*: error.*//' | sort -u | sed 's/^/fmt-check: not formatted (make fmt): /' \
	  | grep . && exit 1 || echo "fmt-check: ok ($$(git ls-files '*.c' '*.h' | wc -l) files)"

# lint-layers: the include direction and link cycles of docs/internals/layout.md
# (tools/check_layers.py; its self-test first, so the check is known to fail when it must)
lint-layers: $(BUILD)/nodewarden
	@python3 tools/check_layers.py --self-test
	@python3 tools/check_layers.py --dirs "$(SRC_DIRS)" --objects $(BUILD)/obj

lint: lint-layers fmt-check $(BUILD)/gen/suites.h
	@command -v cppcheck >/dev/null || { echo "lint: cppcheck is not installed (make deps)"; exit 1; }
	@cppcheck --quiet --error-exitcode=1 --enable=warning,portability,performance \
	  --inline-suppr --std=c11 -I. --suppress=missingIncludeSystem \
	  $(SRC_DIRS)
	@tools/check_citations.sh
	@tools/check_mustuse.sh
	@python3 tools/check_funcs.py
	@echo "lint: ok"

clean:
	rm -rf build/obj build/asan build/nodewarden build/nw-unit build/gen build/fuzz \
	       build/fuzz-replay build/*.log build/test-logs build/release
