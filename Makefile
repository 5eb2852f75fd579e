# SPDX-License-Identifier: GPL-2.0
#
# Front door. `make demo` and `make check` do all set-up themselves (Debian
# packages, rust-src, bindgen, kernel source, patches, cached kernel build).
# The module itself is built by Kbuild (see Kbuild) against the cached kernel.

SHELL := /bin/bash
SCRIPTS := $(CURDIR)/scripts

.PHONY: all kernel module check demo bench two-node fmt clean kernel-clean

all: module

kernel:
	@$(SCRIPTS)/kernel.sh

# KDIR=<a built kernel tree with patches/linux-6.12> builds the modules
# against that kernel instead of the cached one, which is then not needed.
module:
ifeq ($(KDIR),)
	@$(SCRIPTS)/kernel.sh
endif
	@KDIR="$(KDIR)" $(SCRIPTS)/module.sh

check:
	@$(SCRIPTS)/check.sh

demo:
	@$(SCRIPTS)/demo.sh

# Benchmarks on the kernel without debugging options (Documentation/performance.rst).
bench:
	@$(SCRIPTS)/bench.sh

# Two guests on a virtual link, RDMA into the other's moving dma-buf
# (Documentation/two-node.rst); make check runs a shorter variant.
two-node:
	@$(SCRIPTS)/two_node.sh

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
