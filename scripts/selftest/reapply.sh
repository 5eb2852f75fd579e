#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# git_apply_series keeps the modification time of a file whose content the
# re-applied series leaves as it was, so that a series reworded, folded or
# split without changing what it makes rebuilds nothing (every cached
# kernel is built from the one source tree), and gives a new one to every
# file it changes. Checked on a three-file tree and two versions of a patch.
set -uo pipefail
. "$(dirname "$0")/../lib.sh"
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
mkdir -p "$t/src" "$t/a" "$t/b" "$t/logs"
export LOGDIR=$t/logs
printf 'one\n' >"$t/src/one.c"
printf 'two\n' >"$t/src/two.c"
printf 'three\n' >"$t/src/three.c"
git_record_pristine "$t/src" pristine
printf 'ONE\n' >>"$t/src/one.c"
printf 'TWO\n' >>"$t/src/two.c"
git_tree "$t/src" commit -q -a -m "first wording"
git_tree "$t/src" format-patch -q -o "$t/a" pristine..HEAD
git_tree "$t/src" commit -q --amend -m "second wording"
git_tree "$t/src" format-patch -q -o "$t/b" pristine..HEAD
stamps() { stat -c '%.9Y %n' "$t"/src/*.c; }
bad=0
check() {	# check WHAT WANT-CHANGED-FILES BEFORE AFTER
	local changed
	changed=$(diff <(echo "$3") <(echo "$4") | sed -n 's|^> [0-9.]* .*/||p' | tr '\n' ' ')
	if [ "$changed" = "$2" ]; then
		echo "    ok   $1: new times for '${2% }'"
	else
		echo "    FAIL $1: new times for '${changed% }', want '${2% }'" >&2
		bad=1
	fi
}
git_apply_series "$t/src" "$t/a" 2>/dev/null || exit 1
s1=$(stamps)
sleep 0.05
git_apply_series "$t/src" "$t/b" 2>/dev/null || exit 1
s2=$(stamps)
check "the same changes, reworded" "" "$s1" "$s2"
sed -i 's/^+TWO$/+TWICE/' "$t"/b/*.patch
sleep 0.05
git_apply_series "$t/src" "$t/b" 2>/dev/null || exit 1
s3=$(stamps)
check "one file's change changed" "two.c " "$s2" "$s3"
grep -q '^TWICE$' "$t/src/two.c" || { echo "    FAIL two.c lacks the new change" >&2; bad=1; }
exit $bad
