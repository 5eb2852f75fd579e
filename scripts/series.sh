#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The kernel series as the trees upstream would take it: patches/linux-7.3/
# is one ordered series (what the kernels here are built from); each file
# patches/linux-7.3/series/N-NAME.cover cuts a range of it into a series of
# its own, with its cover letter. Header lines, then a blank line, then the
# cover letter's text:
#   Patches: FIRST-LAST   its patches, by number in patches/linux-7.3/
#   Prefix: PATCH         or "RFC PATCH": the subject prefix of all of them
#   Requires: N-NAME...   the series it applies on top of (default: none)
#   Subject: TEXT         the cover letter's subject
#
#   series.sh write [DIR]  each series in DIR/NAME/ (default build/series),
#                          renumbered "[PREFIX n/m]", with a cover letter
#                          naming its base and, as b4 writes them, the patch
#                          ids of its prerequisites: ready for git send-email
#   series.sh patches NAME...  the patch files of the named series, in order
#   series.sh check        each series applies, in order, onto the pristine
#                          tree plus the series it requires, and each patch
#                          of a series that requires none applies to the
#                          pristine tree alone; the ranges cover the whole
#                          series once. In a temporary index: no checkout.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

SDIR=$KPATCHES/series

field() {	# field COVER NAME: a header line's value
	sed -n "/^\$/q; s/^$2: //p" "$1"
}

# patches_of COVER: the patch files of its range, in order.
patches_of() {
	local range first last p n
	range=$(field "$1" Patches)
	first=${range%-*}
	last=${range#*-}
	for p in $(series_patches); do
		n=$(basename "$p")
		n=$((10#${n%%-*}))
		[ "$n" -lt "$first" ] || [ "$n" -gt "$last" ] || echo "$p"
	done
}

covers() {
	ls "$SDIR"/*.cover
}

# apply_cached INDEX PATCH...: applies the patches to the index file INDEX
# (git apply --cached: the tree's files are not touched).
apply_cached() {
	local index=$1 p
	shift
	for p in "$@"; do
		GIT_INDEX_FILE=$index git -C "$KSRC" apply --cached "$p" 2>/dev/null ||
			{ echo "$(basename "$p")"; return 1; }
	done
}

# fresh_index INDEX: INDEX holds the pristine tree.
fresh_index() {
	rm -f "$1"
	GIT_INDEX_FILE=$1 git -C "$KSRC" read-tree pristine
}

check() {
	local idx rc=0 c name req r bad seen=() p ps
	idx=$(mktemp -u "${TMPDIR:-/tmp}/series-index.XXXXXX")
	git -C "$KSRC" rev-parse -q --verify pristine >/dev/null ||
		die "no pristine tree in $KSRC (scripts/kernel.sh --source)"
	for c in $(covers); do
		name=$(basename "$c" .cover)
		fresh_index "$idx"
		for r in $(field "$c" Requires); do
			[ -e "$SDIR/$r.cover" ] || { echo "$name: requires $r, which does not exist" >&2; rc=1; continue; }
			mapfile -t ps < <(patches_of "$SDIR/$r.cover")
			bad=$(apply_cached "$idx" "${ps[@]}") ||
				{ echo "$name: its prerequisite $r does not apply at $bad" >&2; rc=1; }
		done
		mapfile -t ps < <(patches_of "$c")
		[ ${#ps[@]} -gt 0 ] || { echo "$name: no patches in its range" >&2; rc=1; continue; }
		if bad=$(apply_cached "$idx" "${ps[@]}"); then
			req=$(field "$c" Requires)
			echo "    $name: ${#ps[@]} patches apply in order onto pristine${req:+ + $req}"
		else
			echo "$name: $bad does not apply onto pristine + $(field "$c" Requires)" >&2
			rc=1
		fi
		if [ -z "$(field "$c" Requires)" ]; then
			for p in "${ps[@]}"; do
				fresh_index "$idx"
				apply_cached "$idx" "$p" >/dev/null ||
					{ echo "$name: $(basename "$p") does not apply to pristine alone" >&2; rc=1; }
			done
		fi
		seen+=("${ps[@]}")
	done
	rm -f "$idx"
	# Every patch in exactly one series.
	if [ "$(printf '%s\n' "${seen[@]}" | sort | uniq -d)" != "" ] ||
	   [ "$(printf '%s\n' "${seen[@]}" | sort -u | wc -l)" != "$(series_patches | wc -l)" ]; then
		echo "the series' ranges do not cover patches/linux-$UMEM_KVER once each" >&2
		rc=1
	fi
	return $rc
}

write() {
	local out=${1:-$ROOT/build/series} c name prefix ps m i p subj who base
	who=$(sed -n 's/^From: //p' "$KPATCHES/0000-cover-letter.patch")
	base="Linux 7.3.4 as Debian's linux-source-7.3 $(kernel_pkg_version) ships it"
	rm -rf "$out"
	for c in $(covers); do
		name=$(basename "$c" .cover)
		prefix=$(field "$c" Prefix)
		mapfile -t ps < <(patches_of "$c")
		m=${#ps[@]}
		mkdir -p "$out/$name"
		{
			echo "From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001"
			echo "From: $who"
			echo "Subject: [$prefix 0/$m] $(field "$c" Subject)"
			echo
			sed '1,/^$/d' "$c"
			echo
			for p in "${ps[@]}"; do
				awk '/^Subject: / { sub(/^Subject: \[[^]]*\] /, "  "); s = $0; f = 1; next }
				     f && /^ / { s = s $0; next } f { print s; exit }' "$p"
			done
			echo
			echo "Base: $base."
			for r in $(field "$c" Requires); do
				echo "Requires the series $r ($(field "$SDIR/$r.cover" Subject))."
			done
			echo
			echo "---"
			echo "base-commit: v7.3.4"
			for r in $(field "$c" Requires); do
				for p in $(patches_of "$SDIR/$r.cover"); do
					echo "prerequisite-patch-id: $(git patch-id --stable <"$p" | cut -d' ' -f1)"
				done
			done
		} >"$out/$name/0000-cover-letter.patch"
		i=0
		for p in "${ps[@]}"; do
			i=$((i + 1))
			subj=$(basename "$p")
			subj=${subj#*-}
			sed "s|^Subject: \[[^]]*\]|Subject: [$prefix $i/$m]|" "$p" \
				>"$out/$name/$(printf '%04d' $i)-$subj"
		done
		echo "    $out/$name: $m patches, [$prefix n/$m]"
	done
}

case "${1:-}" in
check) check ;;
patches)
	shift
	for name in "$@"; do
		[ -e "$SDIR/$name.cover" ] || die "no series $name in $SDIR"
		patches_of "$SDIR/$name.cover"
	done
	;;
write) write "${2:-}" ;;
*) die "usage: $0 check | patches NAME... | write [DIR]" ;;
esac
