# SPDX-License-Identifier: GPL-2.0
#
# Front door. `make demo` and `make check` do all set-up themselves (Debian
# packages, rust-src, bindgen, kernel source, patches, cached kernel build).
# The module itself is built by Kbuild (see Kbuild) against the cached kernel.

SHELL := /bin/bash
SCRIPTS := $(CURDIR)/scripts

.PHONY: all kernel module check check-full check-slow check-kcsan check-fixes kunit demo docs bench mutants fuzz fuzz-seeds coverage two-node two-node-bench demo-2node fmt clean kernel-clean smoke module-install module-uninstall series check-install

all: module

kernel:
	@$(SCRIPTS)/kernel.sh

# KDIR=<a built kernel tree with patches/linux-7.3> builds the modules
# against that kernel instead of the cached one, which is then not needed.
# The production modules, without their KUnit suites (UMEM_KUNIT=y adds them).
module:
ifeq ($(KDIR),)
	@$(SCRIPTS)/kernel.sh
endif
	@KDIR="$(KDIR)" UMEM_KUNIT=$${UMEM_KUNIT:-n} $(SCRIPTS)/module.sh

# As root on a real machine, after make module KDIR=...: install the
# production module for that kernel (SIGN_KEY=, SIGN_CERT= sign it;
# UMEM_AT_BOOT=1 loads it at boot), or roll back to the built-in C importer
# (scripts/install.sh, Documentation/install.rst).
module-install:
	@KDIR="$(KDIR)" $(SCRIPTS)/install.sh install

module-uninstall:
	@KDIR="$(KDIR)" $(SCRIPTS)/install.sh uninstall

check:
	@$(SCRIPTS)/check.sh

# The install path of Documentation/install.rst as written, as root:
# Debian's own 7.3 configuration with the series, make bindeb-pkg, the
# package installed into a Debian root with dpkg -i and booted under QEMU
# with lockdown=integrity, make smoke and the rollback in it. A lane of its
# own (install.rst, section 11, says how long it takes).
check-install:
	@$(SCRIPTS)/check-install.sh

# The kernel series cut into the series upstream trees would take
# (patches/linux-7.3/series/), each in build/series/NAME/ with its cover
# letter, ready for git send-email; their base is upstream's v7.3.4, by
# its id: UMEM_UPSTREAM=a git repository with that tag.
series:
	@$(SCRIPTS)/kernel.sh --source
	@$(SCRIPTS)/series.sh write

# On a real machine booted into a kernel with the series, as root: one
# dma-buf MR of the system heap on the first RDMA device with an ACTIVE
# port, served by umem_dmabuf_rs, a loopback WRITE and READ checked
# (scripts/smoke.sh; SMOKE_ARGS: -d DEV, -p PORT, -g GIDX, --module KO).
# Needs gcc and libibverbs-dev.
smoke:
	@mkdir -p build/smoke
	@echo '#include <infiniband/verbs.h>' | gcc -E - >/dev/null 2>&1 || \
		{ echo "make smoke: needs libibverbs-dev (apt-get install libibverbs-dev)" >&2; exit 2; }
	@gcc -O2 -Wall -Wextra -Werror -o build/smoke/rdma_dmabuf_smoke \
		samples/rdma_dmabuf_smoke/rdma_dmabuf_smoke.c -libverbs
	@sh $(SCRIPTS)/smoke.sh $(SMOKE_ARGS)

# The KUnit suites of both modules alone, in one short boot (KUNIT_FILTER).
kunit:
	@$(SCRIPTS)/kunit.sh

# make check with every guest pinned to one host CPU: at most half the
# speed, the lane that shows no verdict depends on the machine's speed.
check-slow:
	@UMEM_QEMU_CPUS=$${UMEM_QEMU_CPUS:-0} $(SCRIPTS)/check.sh

# make check with what it leaves out to stay short: rdma-core's whole suite
# on the C importer, the two-node tests on the clean link, the lossy phase
# on the C importer too.
check-full:
	@UMEM_FULL=1 $(SCRIPTS)/check.sh

# The concurrent suites (end to end with migrations, the storm, the fuzzer's
# corpus, the two-node pair) on a KCSAN kernel of their own; a data race
# report fails it (Documentation/coverage.rst, "Data races").
check-kcsan:
	@$(SCRIPTS)/kcsan.sh

# The fixes series at work (Documentation/development.rst, "The fixes"):
# pristine 7.3.4 shows each bug, pristine + the fixes does not, and rxe's
# dma-buf MRs pass rdma-core's DmaBuf tests on the C importer without Rust.
check-fixes:
	@$(SCRIPTS)/fixes.sh

demo:
	@$(SCRIPTS)/demo.sh

# The manual, Documentation/ built by Sphinx into build/docs/html.
docs:
	@$(SCRIPTS)/docs.sh

# Benchmarks on the kernel without debugging options (Documentation/performance.rst).
bench:
	@$(SCRIPTS)/bench.sh

# The suites' detection power: each mistake of scripts/mutants/ built and
# run against the suites that could see it; the kill matrix goes to
# Documentation/mutants.rst. MUTANTS=name... runs only those.
mutants:
	@MUTANTS_UPDATE=$${MUTANTS_UPDATE:-$(if $(MUTANTS),0,1)} $(SCRIPTS)/mutants.sh $(MUTANTS)

# Coverage-guided fuzzing: AFL++ in a guest of the KCOV kernel, FUZZ_SECS
# (600) seconds per importer, resuming from earlier runs; crashes go to
# build/fuzz/crashes, the coverage table to build/fuzz/coverage.txt
# (Documentation/fuzzing.rst). fuzz-seeds rewrites the seed
# corpus (samples/rxe_dmabuf/corpus/seed-*).
fuzz:
	@$(SCRIPTS)/fuzz.sh run

fuzz-seeds:
	@$(SCRIPTS)/fuzz.sh seeds

# Function coverage of the last make check's main boot (and of the last
# make fuzz, when there is one): build/coverage.txt, build/coverage.png and
# the summary table of Documentation/coverage.rst.
coverage:
	@/usr/bin/python3 $(SCRIPTS)/coverage.py report --map build/cover-map.json \
		--log build/logs/check-serial.log --fuzz build/fuzz/reached.json \
		--reasons $(SCRIPTS)/coverage-unreached.txt --table build/coverage.txt \
		--plot build/coverage.png --rst

# Two guests on a virtual link, RDMA into the other's moving dma-buf
# (Documentation/two-node.rst); make check runs a shorter variant.
two-node:
	@$(SCRIPTS)/two_node.sh

# A short transcript of it: a write into the other machine's moving dma-buf.
demo-2node:
	@$(SCRIPTS)/two_node.sh demo

# Numbers across that link: WRITE bandwidth and latency into a dma-buf MR
# against an ordinary MR, both importers, on the fast kernel and a clean
# link; the report goes to build/two-node-bench/, two-node.rst's table and
# its dataset to Documentation/data/ (two-node-tables.rst, -results.json).
two-node-bench:
	@UMEM_KERNEL=fast TWO_NODE_PUBLISH=1 TWO_NODE_NETEM= TWO_NODE_BIG=$${TWO_NODE_BIG:-4194304} \
		TWO_NODE_BENCH=$${TWO_NODE_BENCH:-5,1000} $(SCRIPTS)/two_node.sh

# Formats the Rust sources with the kernel's rustfmt configuration.
fmt:
	@$(SCRIPTS)/lint.sh rustfmt-fix

# Leaves the cached kernel alone.
clean:
	@-$(SCRIPTS)/module.sh clean 2>/dev/null
	@rm -rf build

# Removes the cached kernel (source tree and build) as well.
kernel-clean:
	@. $(SCRIPTS)/lib.sh && echo "removing $$UMEM_CACHE" && rm -rf "$$UMEM_CACHE"
