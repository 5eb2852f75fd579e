#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# lint.sh rustfmt|rustfmt-fix|no-unsafe|clippy-user|checkpatch: style checks on the project's own sources, with
# the kernel's own configuration and tools.
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
no-unsafe)
	# The importer logic and the test bodies stay on the safe abstractions.
	bad=$(grep -n 'unsafe' rust/importer.rs rust/tests.rs \
		samples/dmabuf_exporter/exporter.rs samples/dmabuf_exporter/tests.rs || true)
	[ -z "$bad" ] || { echo "unsafe outside rust/abs/:"; echo "$bad"; exit 1; } >&2
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
	echo "usage: $0 rustfmt|rustfmt-fix|no-unsafe|clippy-user|checkpatch" >&2
	exit 2
	;;
esac
