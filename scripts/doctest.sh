#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# doctest.sh: runs the commands Documentation/install.rst shows, so that a
# step that no longer works (a glob that skips a patch) fails make check.
# A block to run follows a comment line ".. doctest: NAME" as a literal
# block (lib.sh, doc_block):
#   series  applying the series, in a fresh worktree of the cached tree at
#           "pristine"; the result must be the tree the kernel was built from
#   module  building the modules, with the cached test kernel as the tree,
#           in a copy of this tree; the production modules it builds must
#           link no test code (KUnit sections or symbols, fixtures, mock);
#           then make module-install and module-uninstall with it into a
#           scratch root (scripts/selftest/module-install.sh)
# In the commands, /path/to/umem_dmabuf_rs is this project, and
# /path/to/linux-source-$UMEM_KVER the built kernel tree.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

doc=$ROOT/Documentation/install.rst

series=$(doc_block series <"$doc")
module=$(doc_block module <"$doc")
[ -n "$series" ] || die "$doc: no '.. doctest: series' block"
[ -n "$module" ] || die "$doc: no '.. doctest: module' block"

wt=$UMEM_CACHE/doctest-src
git_tree "$KSRC" worktree remove --force "$wt" 2>/dev/null || rm -rf "$wt"
git_tree "$KSRC" worktree prune
git_tree "$KSRC" worktree add -q --detach "$wt" pristine
trap 'git_tree "$KSRC" worktree remove --force "$wt" 2>/dev/null || true' EXIT
(cd "$wt" && eval "${series//\/path\/to\/umem_dmabuf_rs/$ROOT}") >"$LOGDIR/doctest.log" 2>&1 ||
	{ cat "$LOGDIR/doctest.log" >&2; die "install.rst's series block failed"; }
if ! git_tree "$wt" diff --quiet "$(git_tree "$KSRC" rev-parse HEAD)"; then
	git_tree "$wt" diff --stat "$(git_tree "$KSRC" rev-parse HEAD)" >&2
	die "install.rst's series block gives another tree than patches/linux-$UMEM_KVER"
fi
module=${module//\/path\/to\/linux-source-$UMEM_KVER/$KOUT}
# The module block builds the production modules (make module: no KUnit
# suites), in a copy of the tree so that this tree's test build stays.
scratch=$UMEM_CACHE/doctest-module
copy_sources "$scratch"
(cd "$scratch" && eval "$module") >>"$LOGDIR/doctest.log" 2>&1 ||
	{ tail -n 40 "$LOGDIR/doctest.log" >&2; die "install.rst's module block failed"; }
# test_code KO: prints what in KO belongs to the tests: a KUnit section, or
# a symbol of KUnit, of the fixtures (umem_test_*) or of the mock exporter
# (umem_mock_*), defined or called.
test_code() {
	{
		readelf -SW "$1" | grep -o '\.kunit[a-z_]*' || true
		nm "$1" | grep -E 'kunit|umem_test_|umem_mock_' || true
	} | head -n 5
}
for ko in umem_dmabuf_rs.ko samples/dmabuf_exporter/dmabuf_exporter_rs.ko; do
	[ -f "$scratch/$ko" ] || die "make module built no $ko"
	found=$(test_code "$scratch/$ko")
	[ -z "$found" ] || die "the production $ko links test code: $found"
	# The same inspection finds the tests in the test build (make check's).
	if [ -f "$ROOT/$ko" ] && [ -z "$(test_code "$ROOT/$ko")" ]; then
		die "no test code found in the test build's $ko: the inspection sees nothing"
	fi
done
# make module-install and make module-uninstall with that production module,
# into a scratch root.
"$ROOT/scripts/selftest/module-install.sh" "$scratch/umem_dmabuf_rs.ko" ||
	die "make module-install or make module-uninstall failed"
rm -rf "$scratch"
