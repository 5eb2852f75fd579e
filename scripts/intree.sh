#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The patch of the kernel series that adds the Rust importer to the kernel
# tree (drivers/infiniband/core/umem_dmabuf_rs/, behind
# CONFIG_INFINIBAND_UMEM_DMABUF_RUST) is made from the sources edited here,
# never edited by hand:
#   rust/*.rs, rust/abs/     -> drivers/infiniband/core/umem_dmabuf_rs/
#   rust/umem_shim.c, include/umem_dmabuf_rs.h -> the same directory
#   kunit/*.c, include/umem_test.h, include/umem_mock_exporter.h -> its kunit/
#   patches/linux-7.3/intree/Makefile  -> its Makefile
#   patches/linux-7.3/intree/glue.diff -> the Kconfig option and the
#                                         Makefile line of ib_core's directory
#   patches/linux-7.3/intree/message   -> the commit message
# The patch is the last of patches/linux-7.3/, from the cover letter's
# author, numbered as the series.
#
#   intree.sh write   (re)writes the patch into patches/linux-7.3/
#   intree.sh check   fails, saying what differs, unless the committed patch
#                     is what write makes of the tree's sources
#   intree.sh files   lists "SOURCE DESTINATION" pairs
set -euo pipefail
. "$(dirname "$0")/lib.sh"

IN=$KPATCHES/intree
DEST=$INTREE_DIR
SUBJECT=$(head -n 1 "$IN/message")
# The date the patch carries: fixed, so that the same sources make the
# same patch.
DATE="Mon, 7 Dec 2026 09:00:00 +0000"
# The files of ib_core's tree glue.diff edits (none of the patches before
# this one touches them: they are read from the pristine tree).
GLUED=(drivers/infiniband/Kconfig drivers/infiniband/core/Makefile)

files() {
	local f
	for f in "$ROOT"/rust/*.rs "$ROOT"/rust/umem_shim.c; do
		echo "${f#"$ROOT"/} $DEST/$(basename "$f")"
	done
	(cd "$ROOT" && find rust/abs -type f -name '*.rs' | LC_ALL=C sort) |
		while read -r f; do echo "$f $DEST/${f#rust/}"; done
	echo "include/umem_dmabuf_rs.h $DEST/umem_dmabuf_rs.h"
	for f in "$ROOT"/kunit/*.c; do
		echo "${f#"$ROOT"/} $DEST/kunit/$(basename "$f")"
	done
	echo "include/umem_test.h $DEST/kunit/umem_test.h"
	echo "include/umem_mock_exporter.h $DEST/kunit/umem_mock_exporter.h"
	echo "patches/linux-$UMEM_KVER/intree/Makefile $DEST/Makefile"
}

# The patch file of the series that this script writes: the one whose
# subject is the message's first line.
current() {
	local p
	for p in $(series_patches); do
		if sed -n '/^Subject: /{N;s/\n / /;p;q}' "$p" | grep -qF -- "] $SUBJECT"; then
			echo "$p"
			return
		fi
	done
}

# make OUTDIR: writes the patch into OUTDIR (its file name as
# git format-patch gives it), numbered as the last of the series.
make_patch() {
	local out=$1 tmp name email n src dst f
	git -C "$KSRC" rev-parse -q --verify pristine >/dev/null ||
		die "no pristine tree in $KSRC (scripts/kernel.sh --source)"
	# Committed as the build trees' commits are; the author is not
	# exported (scripts/kpatch.sh export).
	name=${BUILD_IDENT% <*}
	email=$(build_email)
	# The patch is the last one: its number is the count of the other
	# patches plus one.
	n=$(series_patches | grep -vxF "$(current)" | wc -l)
	n=$((n + 1))
	tmp=$(mktemp -d "${TMPDIR:-/tmp}/intree.XXXXXX")
	export GIT_AUTHOR_NAME=$name GIT_AUTHOR_EMAIL=$email GIT_AUTHOR_DATE=$DATE
	export GIT_COMMITTER_NAME=$name GIT_COMMITTER_EMAIL=$email GIT_COMMITTER_DATE=$DATE
	git -C "$tmp" init -q
	git -C "$tmp" config core.autocrlf false
	for f in "${GLUED[@]}"; do
		mkdir -p "$tmp/$(dirname "$f")"
		git -C "$KSRC" show "pristine:$f" >"$tmp/$f"
	done
	git -C "$tmp" add -A
	git -C "$tmp" commit -q -m base
	files | while read -r src dst; do
		install -D -m 0644 "$ROOT/$src" "$tmp/$dst"
	done
	git -C "$tmp" apply "$IN/glue.diff" ||
		die "$IN/glue.diff does not apply to pristine ${GLUED[*]}"
	git -C "$tmp" add -A
	{ cat "$IN/message"; echo; echo "Assisted-by: LLM"; } |
		git -C "$tmp" commit -q -F -
	git -C "$tmp" format-patch -q --no-signature --zero-commit --abbrev=9 --subject-prefix="RFC PATCH" \
		-n --start-number "$n" -o "$out" HEAD~1..HEAD
	# No author, as scripts/kpatch.sh export writes them.
	strip_author "$out"/*.patch
	rm -rf "$tmp"
}

case "${1:-}" in
write)
	out=$(mktemp -d "${TMPDIR:-/tmp}/intree-out.XXXXXX")
	make_patch "$out"
	old=$(current)
	[ -z "$old" ] || rm -f "$old"
	mv "$out"/*.patch "$KPATCHES/"
	rmdir "$out"
	ls "$KPATCHES"/*.patch | tail -n 1
	;;
check)
	old=$(current)
	[ -n "$old" ] || die "no patch with the subject \"$SUBJECT\" in $KPATCHES: scripts/intree.sh write"
	out=$(mktemp -d "${TMPDIR:-/tmp}/intree-out.XXXXXX")
	make_patch "$out"
	new=$(ls "$out"/*.patch)
	rc=0
	if [ "$(basename "$new")" != "$(basename "$old")" ]; then
		echo "the in-tree patch should be $(basename "$new"), not $(basename "$old")" >&2
		rc=1
	fi
	if ! diff -u "$old" "$new" >"$out/diff"; then
		echo "$(basename "$old") is not what rust/, kunit/, include/ and $IN make of them:" \
			"run scripts/intree.sh write (differences below, first 40 lines)" >&2
		head -n 40 "$out/diff" >&2
		rc=1
	fi
	rm -rf "$out"
	exit $rc
	;;
files)
	files
	;;
*)
	echo "usage: $0 write|check|files" >&2
	exit 2
	;;
esac
