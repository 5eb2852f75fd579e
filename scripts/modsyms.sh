#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# modsyms.sh [--without SYMBOL] [KOUT]: the test kernel builds ib_core, uverbs and rxe in
# (=y); distributions build them as modules (=m), where modpost refuses
# any symbol they use that vmlinux does not export. This checks, on the
# built objects, that every symbol they take from outside their
# directories is in the build's Module.symvers: a helper of a header
# inline that only built-in code may call (__pci_p2pdma_update_state()
# behind pci_p2pdma_state(), which rxe calls) fails here instead of in a
# distribution's build. Built in, code calls a static call through its key
# (__SCK__NAME), a module through its trampoline (__SCT__NAME): a key
# counts when its trampoline is exported. --without takes SYMBOL out of the
# exports (make check: the check must then fail, naming it).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
without=
if [ "${1:-}" = --without ]; then
	without=$2
	shift 2
fi
out=${1:-$KOUT}
cd "$out"
[ -f Module.symvers ] || die "$out: no Module.symvers (build the kernel first)"
mapfile -t objs < <(ls drivers/infiniband/core/*.o drivers/infiniband/sw/rxe/*.o |
	grep -vE '/(built-in|.*\.mod|rdma_rxe|ib_core|ib_uverbs|ib_uverbs_support|ib_cm|iw_cm|rdma_cm|rdma_ucm|ib_umad)\.o$')
[ ${#objs[@]} -gt 20 ] || die "$out: the objects of drivers/infiniband/core and sw/rxe are missing"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
nm -u "${objs[@]}" | awk 'NF == 2 { print $2 }' | sort -u >"$tmp/used"
nm --defined-only "${objs[@]}" | awk 'NF == 3 { print $3 }' | sort -u >"$tmp/defined"
cut -f2 Module.symvers | grep -vxF "${without:-/}" | sort -u >"$tmp/exported"
missing=$(comm -23 "$tmp/used" "$tmp/defined" | comm -23 - "$tmp/exported" |
	while read -r s; do
		case "$s" in
		__SCK__*) grep -qxF "__SCT__${s#__SCK__}" "$tmp/exported" || echo "$s" ;;
		*) echo "$s" ;;
		esac
	done)
if [ -n "$missing" ]; then
	echo "used by ib_core, uverbs or rxe and not exported (as modules they would not link):" >&2
	echo "$missing" | sed 's/^/    /' >&2
	exit 1
fi
echo "    ${#objs[@]} objects; every symbol they take from elsewhere is exported"
