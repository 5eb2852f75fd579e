#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# buildfail.sh: the misuses of the kernel crate's dma-buf abstractions that
# must not compile, each for its stated reason. Each scripts/buildfail/*.rs
# is built as the only code of a throwaway module against the cached
# kernel. Its "// expect: ECODE MESSAGE" line names the rustc error it
# must stop with ("error" for the borrow-checker errors that have no
# code) and a fragment of that error's message, which names the
# guarded property ("// expect: ok": it must build, the harness's own
# control). A case that must fail also has a twin that must build: the
# same file with each line that carries "//~twin: CODE" replaced by CODE
# (an empty CODE drops the line), so the twin differs from the case only
# where the guarded property does, and the error is shown to come from
# that difference and nothing else.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

[ -f "$KOUT/Module.symvers" ] || die "no built kernel in $KOUT"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# build SRC DIR: builds SRC as the module's case.rs in DIR; its log is
# DIR/log. Prints "ok", or the first error's code and message, "E0505
# cannot move out of ...", or "other".
build() {
	local src=$1 dir=$2 first
	mkdir -p "$dir"
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
		echo ok
		return
	fi
	first=$(grep -m 1 '^error\[E[0-9]*\]: ' "$dir/log" || true)
	if [ -z "$first" ]; then
		# Some borrow-checker errors have no code: "error MESSAGE".
		first=$(grep -m 1 '^error: ' "$dir/log" || true)
		case $first in
		'' | 'error: aborting'*) echo other ;;
		*) echo "error ${first#error: }" ;;
		esac
		return
	fi
	first=${first#error[}
	echo "${first%%]*} ${first#*]: }"
}

rc=0
for src in "$ROOT"/scripts/buildfail/*.rs; do
	name=$(basename "$src" .rs)
	want=$(sed -n 's|^// expect: ||p' "$src")
	code=${want%% *}
	msg=${want#"$code"}
	msg=${msg# }
	got=$(build "$src" "$tmp/$name")
	if [ "$code" = ok ]; then
		if [ "$got" = ok ]; then
			echo "    $name: builds, as expected"
		else
			echo "    $name: expected to build, got $got" >&2
			tail -n 20 "$tmp/$name/log" >&2
			rc=1
		fi
		continue
	fi
	if [ "${got%% *}" != "$code" ] || [ -z "$msg" ] || [[ "$got" != *"$msg"* ]]; then
		echo "    $name: expected $code \"$msg\", got \"$got\"" >&2
		grep -A8 '^error' "$tmp/$name/log" | head -n 30 >&2 || tail -n 20 "$tmp/$name/log" >&2
		rc=1
		continue
	fi
	if ! grep -q '//~twin:' "$src"; then
		echo "    $name: has no twin (//~twin: lines)" >&2
		rc=1
		continue
	fi
	sed -E 's|^( *).*//~twin: ?(.*)$|\1\2|' "$src" >"$tmp/$name.twin.rs"
	twin=$(build "$tmp/$name.twin.rs" "$tmp/$name.twin")
	if [ "$twin" != ok ]; then
		echo "    $name: $code as expected, but its twin does not build: $twin" >&2
		grep -A8 '^error' "$tmp/$name.twin/log" | head -n 30 >&2 || true
		rc=1
		continue
	fi
	echo "    $name: $got; its twin builds"
done
exit $rc
