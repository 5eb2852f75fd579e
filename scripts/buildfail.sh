#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# buildfail.sh: the misuses of the kernel crate's dma-buf abstractions that
# must not compile. Each scripts/buildfail/*.rs is built as the only code of
# a throwaway module against the cached kernel; its "// expect: ECODE" line
# names the rustc error it must stop with ("ok": it must build, the
# harness's own control).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

[ -f "$KOUT/Module.symvers" ] || die "no built kernel in $KOUT"
rc=0
for src in "$ROOT"/scripts/buildfail/*.rs; do
	name=$(basename "$src" .rs)
	want=$(sed -n 's|^// expect: ||p' "$src")
	dir=$(mktemp -d)
	cp "$src" "$dir/case.rs"
	cat >"$dir/buildfail.rs" <<'RS'
// SPDX-License-Identifier: GPL-2.0
//! A throwaway module around one case of scripts/buildfail/.
#![allow(dead_code, unused_imports)]
use kernel::prelude::*;
mod case;
module! {
    type: BuildFail,
    name: "buildfail",
    authors: ["umem-dmabuf-rs developers"],
    description: "build-must-fail case",
    license: "GPL",
}
struct BuildFail;
impl kernel::Module for BuildFail {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        Ok(BuildFail)
    }
}
RS
	echo 'obj-m := buildfail.o' >"$dir/Kbuild"
	if make -C "$KOUT" LLVM=$KLLVM M="$dir" modules >"$dir/log" 2>&1; then
		got=ok
	else
		got=$(grep -o '^error\[E[0-9]*\]' "$dir/log" | head -n 1 | tr -d 'error[]')
		got=${got:-other}
	fi
	if [ "$got" = "$want" ]; then
		echo "    $name: $got, as expected"
	else
		echo "    $name: expected $want, got $got:" >&2
		grep -A8 '^error' "$dir/log" | head -n 30 >&2 || tail -n 20 "$dir/log" >&2
		rc=1
	fi
	rm -rf "$dir"
done
exit $rc
