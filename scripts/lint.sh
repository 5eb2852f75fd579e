#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# lint.sh rustfmt|rustfmt-fix|no-unsafe|clippy-user|clippy-kernel|checkpatch|history [DIR]|
#         examples|patchrefs:
# style checks on the project's own sources, with the kernel's own
# configuration and tools.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
cd "$ROOT"

case "$1" in
rustfmt | rustfmt-fix)
	# Crate roots; rustfmt follows their `mod` declarations.
	roots=(rust/umem_rs.rs samples/dmabuf_exporter/dmabuf_exp.rs)
	check=--check
	[ "$1" = rustfmt-fix ] && check=
	rustfmt $check --edition 2021 --config-path "$KSRC/.rustfmt.toml" "${roots[@]}"
	# The kernel-crate files the series adds or changes, in the cached tree
	# (edited there: kpatch.sh); the kernel's own style.
	mapfile -t kfiles < <(git_tree "$KSRC" diff --name-only pristine..HEAD -- '*.rs')
	[ ${#kfiles[@]} -eq 0 ] ||
		(cd "$KSRC" && rustfmt --check --edition 2021 --config-path .rustfmt.toml "${kfiles[@]}")
	# Userspace crates: their own (default) style.
	for manifest in samples/*/Cargo.toml; do
		cargo fmt --manifest-path "$manifest" -- $check
	done
	;;
clippy-user)
	for manifest in samples/*/Cargo.toml; do
		cargo clippy --quiet --release --locked --manifest-path "$manifest" \
			--target-dir "$CARGO_TARGET" -- -D warnings
	done
	;;
clippy-kernel)
	# The kernel crate with the series' files, rebuilt
	# with the kernel's clippy lints (-W: as if lib.rs had changed; the
	# object is the same, so nothing else is rebuilt until the next kernel
	# build). Warnings fail the check.
	out=$(make -s -C "$KSRC" O="$KOUT" LLVM=$KLLVM CLIPPY=1 -W rust/kernel/lib.rs \
		rust/kernel.o 2>&1) || { echo "$out" >&2; exit 1; }
	if grep -q 'warning' <<<"$out"; then
		echo "$out" >&2
		exit 1
	fi
	;;
no-unsafe)
	# Each module's logic and test bodies stay on the safe abstractions:
	# `unsafe` only in its abstraction layer (abs/) and the kernel crate.
	# The compiler enforces it: every such file forbids unsafe code
	# (`#![forbid(unsafe_code)]`, which nothing inside can lift); this
	# checks that none lacks the attribute. The crate roots hold only the
	# module glue (module!, #[no_mangle] symbols for C) and are grepped.
	mapfile -t files < <(find rust samples/dmabuf_exporter -name '*.rs' \
		-not -path '*/abs/*' -not -path '*/user/*' \
		-not -name umem_rs.rs -not -name dmabuf_exp.rs | LC_ALL=C sort)
	missing=$(grep -L '^#!\[forbid(unsafe_code)\]$' "${files[@]}" || true)
	[ -z "$missing" ] || { echo "without #![forbid(unsafe_code)]:"; echo "$missing"; exit 1; } >&2
	roots=(rust/umem_rs.rs samples/dmabuf_exporter/dmabuf_exp.rs)
	# Comment lines may name it.
	bad=$(grep -nw unsafe "${roots[@]}" | grep -vE '^[^:]+:[0-9]+:[[:space:]]*//' || true)
	[ -z "$bad" ] || { echo "unsafe outside the abstraction layers:"; echo "$bad"; exit 1; } >&2
	;;
history)
	# The tree speaks of the product, not of how it was made: no
	# development diary (numbered work sessions, dated entries, words about
	# the development host), no talk of time allowances, no numbers of an
	# issue tracker that does not ship with it. History is git log. The
	# rdma-core series is upstream text. The words are put together here
	# so that this file does not match itself.
	s=sess m=mach d=devel b=bud i=iss
	pat="${s}ion [0-9]|this ${s}ion|this ${m}ine|${d}oped on|\\b${i}ues? #?[0-9]+|"
	pat+="\\b${b}get\\b|\\b20[0-9]{2}-[01][0-9]-[0-3][0-9]\\b|"
	# A lab notebook's voice: scratch scripts thrown away, experiments done
	# manually, the hosts of its development, attempts and versions that
	# are gone, runs that came before.
	k=kept h=hand t=tried f=first e=earlier
	pat+="not ${k}\\b|\\b(stopped|done|made|run|ran|killed|measured|tested|checked) by ${h}\\b|"
	pat+="${d}opment ${m}ines?|"
	pat+="\\bwas ${t}\\b|${t} and dropped|\\ba ${f} version|\\b${e} runs? of|\\bin an ${e} run"
	# A second argument names another git tree (plants.sh plants a line).
	bad=$(git -C "${2:-$ROOT}" grep --untracked -nIiE "$pat" -- . ':!patches/rdma-core' || true)
	[ -z "$bad" ] || { echo "development history in the tree:"; echo "$bad"; exit 1; } >&2
	;;
examples)
	# Every public item of kernel::dma_buf, and each one the series adds
	# elsewhere in the kernel crate, shown in a runnable example
	# (scripts/examples.py has the rules).
	python3 "$ROOT/scripts/examples.py" "$KSRC"
	;;
patchrefs)
	# The manual names patches of the series by number and subject, checked
	# against patches/linux-7.3 (scripts/patchrefs.py).
	python3 "$ROOT/scripts/patchrefs.py"
	;;
checkpatch)
	# Tracked and untracked (not ignored) files, so new files are checked too.
	mapfile -t files < <(git ls-files --cached --others --exclude-standard '*.c' '*.h' 2>/dev/null ||
		find . -name '*.[ch]')
	[ ${#files[@]} -eq 0 ] && exit 0
	"$KSRC/scripts/checkpatch.pl" --strict -q --no-tree \
		-f "${files[@]}"
	;;
*)
	echo "usage: $0 rustfmt|rustfmt-fix|no-unsafe|clippy-user|clippy-kernel|checkpatch|history|examples|patchrefs" >&2
	exit 2
	;;
esac
