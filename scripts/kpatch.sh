#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Round trip for developing the kernel patches in the cached source tree.
#   kpatch.sh checkout    reset the cached tree to pristine + patches/ (commits)
#   kpatch.sh export      write the commits above "pristine" back to patches/
#                         (0000-cover-letter.patch, written by hand, is kept)
#   kpatch.sh check       checkpatch --strict every patch in patches/; the
#                         cover letter must count the patches it covers
#   kpatch.sh build-each [SERIES...]
#                         each series (patches/linux-7.3/series/, all or
#                         those named) on its declared base alone, the
#                         pristine tree plus the series it requires: the
#                         test kernel with the hardware drivers built after
#                         each of its patches in turn, in a separate tree
#                         and build directory of the cache (the first build
#                         is a full one: 15 to 35 minutes; then a few
#                         minutes a patch). Each success is kept in
#                         $UMEM_CACHE/build-each.txt under the tree the
#                         patch gives and the configuration; a tree built
#                         already is not built again, so a run resumes
#                         where the last stopped and a new or changed patch
#                         builds alone with those after it
set -euo pipefail
. "$(dirname "$0")/lib.sh"
PDIR=$KPATCHES
COVER=$PDIR/0000-cover-letter.patch
# The subject prefix of every patch, the cover letter's own.
PREFIX="RFC PATCH"

# Brings the cached tree to pristine + patches/ unless it is there already
# (its HEAD is what patches/ make; uncommitted edits there are left alone).
series_tree() {
	if [ "$(cut -d' ' -f1 "$KSRC/.umem-series" 2>/dev/null)" != "$(series_key)" ]; then
		"$ROOT/scripts/kernel.sh" --prepare-only >&2
	fi
}

case "${1:-}" in
checkout)
	"$ROOT/scripts/kernel.sh" --prepare-only
	say "cached tree $KSRC is at pristine + $(series_patches | wc -l) patches; commit there, then: $0 export"
	;;
export)
	series_patches | xargs -r rm -f
	# Numbered under the cover's prefix: "[RFC PATCH 01/36]" as sent.
	git -C "$KSRC" format-patch -q --no-signature --zero-commit --subject-prefix="$PREFIX" -n \
		-o "$PDIR" pristine..HEAD
	# No author: whoever sends the series is its author (make series adds
	# their From:), so the tree's commit identity is not exported.
	strip_author $(series_patches) "$COVER"
	# The cover letter's text is written by hand; its shortlog and diffstat
	# (from the shortlog's first line "NAME (N):" to the end) follow the
	# series, the line named "Patches (N):" rather than by the tree's
	# commit identity.
	stat=$(git -C "$KSRC" format-patch --cover-letter --subject-prefix="$PREFIX" --stdout pristine..HEAD |
		awk '/^\*\*\* BLURB HERE/ { f = 1; next }
		     f && !d && /^[^ ].* \([0-9]+\):$/ { p = 1; sub(/^.* \(/, "Patches ("); print; next }
		     p && /^-- ?$/ { p = 0; d = 1 }
		     p && !/^ create mode/')
	awk -v stat="$stat" '/^[^ ].* \([0-9]+\):$/ && !done { print stat; print ""; skip = 1; done = 1 }
		skip && /^-- ?$/ { skip = 0 }
		!skip' "$COVER" >"$COVER.tmp" && mv "$COVER.tmp" "$COVER"
	# patches/ is now exactly pristine..HEAD of the cached tree: record it,
	# so that nothing re-applies the series (and touches every patched file)
	# to get what the tree already has.
	series_state >"$KSRC/.umem-series"
	ls "$PDIR"
	;;
check)
	[ -x "$KSRC/scripts/checkpatch.pl" ] || "$ROOT/scripts/kernel.sh" --prepare-only
	rc=0
	series_tree
	# UNKNOWN_COMMIT_ID: the cached tree is Debian's tarball, without
	# upstream's history, so checkpatch cannot look up a Fixes: id.
	# MISSING_SIGN_OFF: the sign-off is the submitter's, added by make
	# series SIGNOFF=1 (series.sh selftest checks that it is there then).
	for p in $(series_patches); do
		"$KSRC/scripts/checkpatch.pl" --strict -q --no-tree \
			--ignore FILE_PATH_CHANGES,UNKNOWN_COMMIT_ID,MISSING_SIGN_OFF "$p" || rc=1
	done
	n=$(series_patches | wc -l)
	if ! grep -q "^Subject: \[$PREFIX 0/$n\]" "$COVER"; then
		echo "$COVER: its Subject must read [$PREFIX 0/$n] (the series has $n patches)" >&2
		rc=1
	fi
	# No identity: no patch has an author (From:) or a Signed-off-by:;
	# whoever sends the series is their author, and only that human may
	# certify the DCO (make series writes their From:, and SIGNOFF=1
	# their Signed-off-by:). The assistance each patch was prepared with
	# is named by one Assisted-by: (Documentation/process/
	# coding-assistants.rst). Every patch is under the cover's prefix and
	# numbering.
	i=0
	if sed '/^$/q' "$COVER" | grep -q '^From: '; then
		echo "$(basename "$COVER"): must have no From: line" >&2
		rc=1
	fi
	for p in $(series_patches); do
		i=$((i + 1))
		if sed '/^$/q' "$p" | grep -q '^From: ' ||
		   grep -q '^Signed-off-by: ' "$p" ||
		   [ "$(grep -cx 'Assisted-by: LLM' "$p")" != 1 ] ||
		   ! grep -q "^Subject: \[$PREFIX $(printf '%0*d' ${#n} $i)/$n\] " "$p"; then
			echo "$(basename "$p"): must have no From: line, one Assisted-by: LLM and no Signed-off-by:, Subject: [$PREFIX $i/$n]" >&2
			rc=1
		fi
	done
	# Nor does the MAINTAINERS entry name anyone: make series writes the
	# submitter as its M:.
	if grep -h '^+M:' $(series_patches) | grep -q .; then
		echo "a MAINTAINERS entry of the series names a maintainer (M:): make series writes the submitter's" >&2
		rc=1
	fi
	exit $rc
	;;
build-each)
	# Each series of patches/linux-7.3/series/ on its own declared base:
	# the pristine tree plus the series its cover letter requires, and
	# nothing else (so the Rust dma-buf series builds without the RDMA
	# patches), then its patches one by one, the test kernel's
	# configuration with the hardware drivers that have dma-buf MRs
	# (lib.sh, UMEM_KERNEL=series) built after each: it builds the most
	# (KUnit, Rust, rxe and every caller of the importer). Series named on
	# the command line alone, else all of them in order.
	shift
	UMEM_KERNEL=series "$ROOT/scripts/kernel.sh" --configure-only >/dev/null
	cfg=$UMEM_CACHE/config-series$KSUFFIX/.config
	wt=$UMEM_CACHE/series-src$KSUFFIX
	out=$(kernel_vars series && echo "$KOUT")
	source_worktree "$wt"
	mkdir -p "$out"
	cmp -s "$cfg" "$out/.config" || cp "$cfg" "$out/.config"
	# A result stands for the tree a patch gives (its own, every earlier
	# patch of its series and its prerequisites) built with this
	# configuration: a tree built before is not built again, in whichever
	# series it came. Kbuild rebuilds what a checkout changed, whatever
	# the build directory held before.
	results=$UMEM_CACHE/build-each.txt
	cfgsum=$(sha256sum <"$cfg" | cut -c1-16)
	names=("$@")
	[ ${#names[@]} -gt 0 ] || mapfile -t names < <(ls "$PDIR"/series/*.cover | xargs -n1 basename | sed 's/\.cover$//')
	rc=0
	for name in "${names[@]}"; do
		cover=$PDIR/series/$name.cover
		[ -e "$cover" ] || die "no series $name in $PDIR/series"
		reqs=$(sed -n '/^$/q; s/^Requires: //p' "$cover")
		git_tree "$wt" am --abort >/dev/null 2>&1 || true
		git_tree "$wt" checkout -q --detach pristine
		for p in $("$ROOT/scripts/series.sh" patches $reqs) BASE $("$ROOT/scripts/series.sh" patches "$name"); do
			if [ "$p" = BASE ]; then
				base=$(git_tree "$wt" rev-parse HEAD)
				continue
			fi
			am_patch "$wt" "$p" >"$LOGDIR/patch.log" 2>&1 || {
				cat "$LOGDIR/patch.log" >&2
				git_tree "$wt" am --abort >/dev/null 2>&1 || true
				die "$name: $(basename "$p") does not apply onto pristine${reqs:+ + $reqs}"
			}
		done
		mapfile -t commits < <(git_tree "$wt" rev-list --reverse "$base..HEAD")
		say "series $name: ${#commits[@]} patches on pristine${reqs:+ + $reqs}"
		for ((i = 0; i < ${#commits[@]}; i++)); do
			c=${commits[$i]}
			key="$(git_tree "$wt" rev-parse "$c^{tree}" | cut -c1-16) $cfgsum"
			subject=$(git_tree "$wt" log -1 --format=%s "$c")
			what="$name $((i + 1))/${#commits[@]}"
			if grep -q "^ok $key " "$results" 2>/dev/null; then
				say "$what: built before: $subject"
				continue
			fi
			git_tree "$wt" checkout -q --detach "$c"
			log=$LOGDIR/build-each-$name-$((i + 1)).log
			say "$what: $subject (log: $log)"
			if PROGRESS_COUNT_FILE=$UMEM_CACHE/objcount-series$KSUFFIX \
				run_with_progress "build after $what" "$log" "$out" \
				make -C "$wt" O="$out" LLVM=$KLLVM -j"$(nproc)"; then
				echo "ok $key $what $subject" >>"$results"
				say "$what builds"
			else
				say "$what does not build: $subject (log: $log)"
				rc=1
				break 2
			fi
		done
	done
	exit $rc
	;;
*)
	sed -n '3,22p' "$0"
	exit 2
	;;
esac
