#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The ib_core hook is exported to the Rust importer only
# (EXPORT_SYMBOL_FOR_MODULES(..., "umem_dmabuf_rs"), patches/linux-7.3/):
# against the test kernel, a module of another name that registers an
# importer is refused by modpost, naming the symbol's namespace, and its
# twin, the same source built as umem_dmabuf_rs, builds.
set -uo pipefail
. "$(dirname "$0")/../lib.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
[ -f "$KOUT/Module.symvers" ] || die "no built test kernel in $KOUT (scripts/kernel.sh)"

# build NAME: builds the one-file module NAME.ko in its own directory;
# prints make's output.
build() {
	mkdir -p "$tmp/$1"
	cat >"$tmp/$1/$1.c" <<'EOF'
// SPDX-License-Identifier: GPL-2.0
#include <linux/module.h>
#include <rdma/ib_umem.h>

static int __init hook_user_init(void)
{
	return ib_umem_dmabuf_register_ops(&ib_umem_dmabuf_builtin_ops);
}
module_init(hook_user_init);

MODULE_DESCRIPTION("a user of the ib_core dma-buf importer hook");
MODULE_LICENSE("GPL");
EOF
	echo "obj-m += $1.o" >"$tmp/$1/Kbuild"
	make -C "$KOUT" LLVM=$KLLVM M="$tmp/$1" modules 2>&1
}

bad=0
if out=$(build other_importer); then
	echo "    FAIL a module named other_importer built against the hook's exports" >&2
	bad=1
else
	for sym in ib_umem_dmabuf_register_ops ib_umem_dmabuf_builtin_ops; do
		if grep "other_importer" <<<"$out" |
			grep -qF "uses symbol '$sym' from namespace 'module:umem_dmabuf_rs'"; then
			echo "    ok   refused to other_importer: $sym (namespace module:umem_dmabuf_rs)"
		else
			echo "    FAIL other_importer was refused, but not for $sym's namespace:" >&2
			grep -i 'error' <<<"$out" | head -n 5 >&2
			bad=1
		fi
	done
fi
if out=$(build umem_dmabuf_rs); then
	echo "    ok   the same source, built as umem_dmabuf_rs, links"
else
	echo "    FAIL the same source, built as umem_dmabuf_rs, does not build:" >&2
	tail -n 10 <<<"$out" >&2
	bad=1
fi
exit $bad
