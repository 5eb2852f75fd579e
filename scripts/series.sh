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
#   Max-lines: N          no patch of it over N lines (optional)
#
#   series.sh write [DIR]  each series in DIR/NAME/ (default build/series),
#                          renumbered "[PREFIX n/m]", with a cover letter
#                          naming its base and, as b4 writes them, the patch
#                          ids of its prerequisites, as from the submitter
#                          (UMEM_SUBMITTER="Name <address>", else git's
#                          user.name and user.email; never the build
#                          trees' identity, and refused without one):
#                          the patches of patches/ have no author, the
#                          submitter is, and the MAINTAINERS entry's M:;
#                          with SIGNOFF=1 each patch
#                          gets the submitter's Signed-off-by: after its
#                          Assisted-by: (their certificate of origin: only
#                          they may add it). Ready for git send-email.
#                          The base is upstream's v7.3.4, named by its
#                          commit id: UMEM_UPSTREAM is a git repository
#                          with that tag (a clone of linux-stable, or
#                          "git fetch --depth 1 URL tag v7.3.4" into an
#                          empty one); every file the series touches must
#                          be the same there as in the Debian source it is
#                          built on (refused otherwise, naming the files)
#   series.sh base         that comparison alone: how many files upstream's
#                          v7.3.4 and the Debian source differ in (Debian's
#                          patches, the DFSG removals), and that the series
#                          touches none of them
#   series.sh selftest     write, into a scratch directory, for a made-up
#                          submitter with and without SIGNOFF=1, on a
#                          made-up upstream, checked; and its refusal of no
#                          or the build identity, of no upstream, and of an
#                          upstream that differs in a file the series touches
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
	local idx rc=0 c name req r bad seen=() p ps max
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
		max=$(field "$c" Max-lines)
		for p in "${ps[@]}"; do
			[ -z "$max" ] || [ "$(wc -l <"$p")" -le "$max" ] ||
				{ echo "$name: $(basename "$p") has $(wc -l <"$p") lines, over its Max-lines: $max" >&2; rc=1; }
		done
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

# The upstream release the series is for, as tagged upstream.
UPSTREAM_TAG=v7.3.4

# touched: every path a patch of the series reads or writes, once each.
touched() {
	series_patches | xargs -r git apply --numstat -z 2>/dev/null | tr '\0' '\n' |
		sed -n 's/^[0-9-]*\t[0-9-]*\t//p' | LC_ALL=C sort -u
}

# upstream_base: the commit id of $UPSTREAM_TAG in $UMEM_UPSTREAM, once the
# files the series touches are found the same there as in the pristine
# tree (blob ids compare across repositories: same id, same bytes). Dies
# otherwise, saying why. With -v, also says how many files differ in all.
upstream_base() {
	local up=${UMEM_UPSTREAM:-} id diff bad
	[ -n "$up" ] ||
		die "the series' base is upstream's $UPSTREAM_TAG, named by its commit id: set UMEM_UPSTREAM to a git repository that has the tag (a clone of linux-stable, or an empty repository after: git fetch --depth 1 https://git.kernel.org/pub/scm/linux/kernel/git/stable/linux.git tag $UPSTREAM_TAG)"
	id=$(git -C "$up" rev-parse -q --verify "$UPSTREAM_TAG^{commit}" 2>/dev/null) ||
		die "$up has no commit tagged $UPSTREAM_TAG"
	git -C "$KSRC" rev-parse -q --verify pristine >/dev/null ||
		die "no pristine tree in $KSRC (scripts/kernel.sh --source)"
	# Paths whose blob (or presence) differs between the two trees.
	diff=$(LC_ALL=C comm -3 <(git -C "$up" ls-tree -r --full-tree "$id" | cut -f 1 --complement -d' ' | LC_ALL=C sort) \
		<(git -C "$KSRC" ls-tree -r --full-tree pristine | cut -f 1 --complement -d' ' | LC_ALL=C sort) |
		sed 's/^\t//' | cut -f 2 | LC_ALL=C sort -u)
	bad=$(LC_ALL=C comm -12 <(printf '%s\n' "$diff" | sed '/^$/d') <(touched))
	[ -z "$bad" ] ||
		die "upstream's $UPSTREAM_TAG ($id) and Debian's source differ in files the series touches: $(echo $bad)"
	if [ "${1:-}" = -v ]; then
		echo "    upstream's $UPSTREAM_TAG is $id; $(printf '%s\n' "$diff" | sed '/^$/d' | wc -l) files differ from Debian's source, none of the $(touched | wc -l) the series touches" >&2
	fi
	echo "$id"
}

# submitter: UMEM_SUBMITTER, else "user.name <user.email>" of git, else
# nothing.
submitter() {
	local n e
	if [ -n "${UMEM_SUBMITTER:-}" ]; then
		echo "$UMEM_SUBMITTER"
		return
	fi
	n=$(git config user.name 2>/dev/null) || true
	e=$(git config user.email 2>/dev/null) || true
	[ -z "$n" ] || [ -z "$e" ] || echo "$n <$e>"
}

# as_submitter ME: a patch of the series (stdin, which has no author) as
# from ME; ME also the M: of each MAINTAINERS entry the patch adds (its
# hunk's line count and the diffstat follow); with SIGNOFF=1 ME's
# Signed-off-by: after the Assisted-by: line.
as_submitter() {
	awk -v me="$1" -v sign="${SIGNOFF:-}" '
		{ l[++n] = $0 }
		END {
			# Entries added to MAINTAINERS: a title line followed by
			# a field line, in the diff of that file.
			for (i = 1; i <= n; i++) {
				if (l[i] ~ /^diff --git /)
					inm = (l[i] == "diff --git a/MAINTAINERS b/MAINTAINERS")
				if (l[i] ~ /^@@ /)
					hunk = i
				if (inm && l[i] ~ /^\+[^\t]+$/ && l[i] !~ /^\+[A-Z]:/ &&
				    l[i + 1] ~ /^\+[A-Z]:\t/) {
					title[i] = 1
					grow[hunk]++
					added++
				}
			}
			for (i = 1; i <= n; i++) {
				s = l[i]
				if (i == 2)
					print "From: " me
				if (s ~ /^@@ / && grow[i]) {
					match(s, /\+[0-9]+,[0-9]+/)
					split(substr(s, RSTART + 1, RLENGTH - 1), r, ",")
					s = substr(s, 1, RSTART) r[1] "," (r[2] + grow[i]) substr(s, RSTART + RLENGTH)
				}
				if (added && s ~ /^ MAINTAINERS +\| +[0-9]+ [+-]*$/) {
					match(s, /[0-9]+/)
					g = ""
					for (k = 0; k < added; k++)
						g = g "+"
					s = substr(s, 1, RSTART - 1) (substr(s, RSTART, RLENGTH) + added) \
					    substr(s, RSTART + RLENGTH) g
				}
				if (added && s ~ /^ [0-9]+ files? changed/ && match(s, /[0-9]+ insertions?/)) {
					k = substr(s, RSTART, RLENGTH) + added
					s = substr(s, 1, RSTART - 1) k " insertions" substr(s, RSTART + RLENGTH)
				}
				print s
				if (title[i])
					print "+M:\t" me
				if (s == "Assisted-by: LLM" && sign == "1")
					print "Signed-off-by: " me
			}
		}'
}

# attribution: the cover letters' paragraph on who certifies what.
attribution() {
	fmt -w 72 <<-EOF
	Each patch was prepared with an AI coding assistant and says so with
	Assisted-by: LLM (Documentation/process/coding-assistants.rst); that
	tag stays on every patch. The Signed-off-by: on each is the sender's
	alone: with it the sender certifies the Developer's Certificate of
	Origin (Documentation/process/submitting-patches.rst) for a patch they
	have read and take responsibility for, which no assistant can do.
	EOF
}

write() {
	local out=${1:-$ROOT/build/series} c name prefix ps m i p subj base me id
	me=$(submitter)
	[ -n "$me" ] ||
		die "make series writes the series as from you: set git's user.name and user.email, or UMEM_SUBMITTER='Name <address>'"
	[ "$me" != "$BUILD_IDENT" ] ||
		die "'$me' is the build trees' commit identity, not a person: set your own (git config user.name/user.email, or UMEM_SUBMITTER)"
	echo "$me" | grep -qE '^[^<>]+ <[^<>@ ]+@[^<> ]+>$' ||
		die "the submitter must read 'Name <address>', not '$me'"
	id=$(upstream_base -v) || exit 1
	base="Linux 7.3.4 (upstream's $UPSTREAM_TAG, the base-commit below); built and tested on Debian's linux-source-7.3 $(kernel_pkg_version), whose files the series touches are upstream's"
	rm -rf "$out"
	for c in $(covers); do
		name=$(basename "$c" .cover)
		prefix=$(field "$c" Prefix)
		mapfile -t ps < <(patches_of "$c")
		m=${#ps[@]}
		mkdir -p "$out/$name"
		{
			echo "From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001"
			echo "From: $me"
			echo "Subject: [$prefix 0/$m] $(field "$c" Subject)"
			echo
			sed '1,/^$/d' "$c"
			echo
			for p in "${ps[@]}"; do
				awk '/^Subject: / { sub(/^Subject: \[[^]]*\] /, "  "); s = $0; f = 1; next }
				     f && /^ / { s = s $0; next } f { print s; exit }' "$p"
			done
			echo
			echo "Base: $base." | fmt -w 72
			for r in $(field "$c" Requires); do
				echo "Requires the series $r ($(field "$SDIR/$r.cover" Subject))."
			done
			echo
			attribution
			echo
			echo "---"
			echo "base-commit: $id"
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
			sed "s|^Subject: \[[^]]*\]|Subject: [$prefix $i/$m]|" "$p" | as_submitter "$me" \
				>"$out/$name/$(printf '%04d' $i)-$subj"
		done
		echo "    $out/$name: $m patches, [$prefix n/$m]"
	done
	if [ "${SIGNOFF:-}" = 1 ]; then
		echo "    from and signed off by $me"
	else
		echo "    from $me, not signed off: read every patch, then make series SIGNOFF=1 adds your"
		echo "    Signed-off-by: (the Developer's Certificate of Origin, which only you can give:"
		echo "    Documentation/process/submitting-patches.rst and coding-assistants.rst in the kernel)"
	fi
}

# fake_upstream DIR [PATH]: a repository at DIR whose $UPSTREAM_TAG is a
# commit of its own with the pristine tree, PATH's contents changed if
# given (its objects borrowed from the cached tree's: no copy).
fake_upstream() {
	local d=$1 objs tree blob idx
	objs=$(cd "$KSRC" && cd "$(git rev-parse --git-common-dir)/objects" && pwd)
	rm -rf "$d"
	git init -q "$d"
	echo "$objs" >"$d/.git/objects/info/alternates"
	tree=$(git -C "$KSRC" rev-parse "pristine^{tree}")
	if [ -n "${2:-}" ]; then
		blob=$( (git -C "$KSRC" cat-file blob "pristine:$2" 2>/dev/null; echo "/* upstream's */") |
			git -C "$d" hash-object -w --stdin)
		idx=$d/.git/scratch-index
		GIT_INDEX_FILE=$idx git -C "$d" read-tree "$tree"
		GIT_INDEX_FILE=$idx git -C "$d" update-index --add --cacheinfo "100644,$blob,$2"
		tree=$(GIT_INDEX_FILE=$idx git -C "$d" write-tree)
		rm -f "$idx"
	fi
	GIT_AUTHOR_NAME=upstream GIT_AUTHOR_EMAIL=upstream@example.org \
	GIT_COMMITTER_NAME=upstream GIT_COMMITTER_EMAIL=upstream@example.org \
		git -C "$d" commit-tree "$tree" -m "Linux 7.3.4" |
		xargs git -C "$d" tag "$UPSTREAM_TAG"
}

# selftest_base: make series names upstream's commit as the base of every
# series; refuses without an upstream, and with one that differs from the
# Debian source in a file the series touches, but not in another file.
selftest_base() {
	local d id p rc=0 me="Ada Submitter <ada@example.org>" err
	d=$(mktemp -d)
	fake_upstream "$d/up"
	id=$(git -C "$d/up" rev-parse "$UPSTREAM_TAG^{commit}")
	UMEM_SUBMITTER=$me UMEM_UPSTREAM=$d/up write "$d/out" >/dev/null 2>&1 ||
		{ echo "selftest: make series failed on an upstream the same as the Debian source" >&2; rc=1; }
	for p in "$d"/out/*/0000-cover-letter.patch; do
		grep -qxF "base-commit: $id" "$p" ||
			{ echo "selftest: $p does not name $id as its base-commit" >&2; rc=1; }
	done
	[ -e "$p" ] || rc=1
	if (UMEM_SUBMITTER=$me UMEM_UPSTREAM= write "$d/none") >/dev/null 2>&1; then
		echo "selftest: make series wrote a series without an upstream to name its base" >&2
		rc=1
	fi
	# A file no patch touches may differ (Debian's patches, DFSG removals).
	fake_upstream "$d/up" README
	if ! err=$( (UMEM_SUBMITTER=$me UMEM_UPSTREAM=$d/up write "$d/other") 2>&1 >/dev/null) ||
	   ! grep -q "1 files differ" <<<"$err"; then
		echo "selftest: an upstream differing in README only was refused, or not counted: $err" >&2
		rc=1
	fi
	fake_upstream "$d/up" drivers/infiniband/core/umem_dmabuf.c
	if err=$( (UMEM_SUBMITTER=$me UMEM_UPSTREAM=$d/up write "$d/touched") 2>&1 >/dev/null) ||
	   ! grep -q "differ in files the series touches: drivers/infiniband/core/umem_dmabuf.c" <<<"$err"; then
		echo "selftest: an upstream differing in umem_dmabuf.c was not refused, naming it: $err" >&2
		rc=1
	fi
	rm -rf "$d"
	[ $rc = 0 ] && echo "    base-commit: upstream's $UPSTREAM_TAG id; refused without an upstream, and with one that differs in a touched file"
	return $rc
}

# selftest: write for a made-up submitter, with and without SIGNOFF=1,
# and check the result: every patch from the submitter alone, signed off
# only when asked, the MAINTAINERS entry theirs and still applying; no
# submitter, and the build trees' identity, refused.
selftest() {
	local d me p n idx rc=0
	d=$(mktemp -d)
	me="Ada Submitter <ada@example.org>"
	fake_upstream "$d/up"
	export UMEM_UPSTREAM=$d/up
	UMEM_SUBMITTER=$me SIGNOFF=1 write "$d/signed" >/dev/null
	UMEM_SUBMITTER=$me SIGNOFF= write "$d/unsigned" >/dev/null
	n=0
	for p in "$d"/signed/*/0*.patch; do
		case "$p" in */0000-cover-letter.patch) continue ;; esac
		n=$((n + 1))
		[ "$(sed '/^$/q' "$p" | grep -c '^From: ')" = 1 ] &&
			sed '/^$/q' "$p" | grep -qxF "From: $me" &&
			[ "$(grep -c '^Signed-off-by: ' "$p")" = 1 ] &&
			grep -A1 -x 'Assisted-by: LLM' "$p" | grep -qxF "Signed-off-by: $me" ||
			{ echo "$p: not from and signed off by $me alone, after its Assisted-by:" >&2; rc=1; }
	done
	[ "$n" = "$(series_patches | wc -l)" ] || { echo "selftest: $n patches written, not $(series_patches | wc -l)" >&2; rc=1; }
	# checkpatch's own sign-off checks pass on the signed form.
	for p in "$d"/signed/*/0*.patch; do
		case "$p" in */0000-cover-letter.patch) continue ;; esac
		"$KSRC/scripts/checkpatch.pl" -q --no-tree --no-summary \
			--types MISSING_SIGN_OFF,NO_AUTHOR_SIGN_OFF,BAD_SIGN_OFF,FROM_SIGN_OFF_MISMATCH,BAD_SIGNATURE "$p" >&2 ||
			{ echo "selftest: checkpatch's sign-off checks fail on $p" >&2; rc=1; }
	done
	if grep -rh '^From: \|^Signed-off-by: \|^+M:' "$d/signed" | grep -vxF -e "From: $me" \
		-e "Signed-off-by: $me" -e "+M:	$me" >&2; then
		echo "selftest: an identity other than the submitter's in the lines above" >&2
		rc=1
	fi
	# Every cover letter says what the sender certifies and which tag stays.
	for p in "$d"/signed/*/0000-cover-letter.patch; do
		tr '\n' ' ' <"$p" | grep -q "Assisted-by: LLM.*tag stays.*certifies the Developer's Certificate of Origin" ||
			{ echo "selftest: $p does not say what the sender certifies" >&2; rc=1; }
	done
	# The MAINTAINERS entry names the submitter and, a line longer, still
	# applies to the pristine tree.
	p=$(grep -lxF "+M:	$me" "$d"/signed/*/0*.patch | head -n 1)
	idx=$(mktemp -u "${TMPDIR:-/tmp}/series-index.XXXXXX")
	fresh_index "$idx"
	if [ -z "$p" ]; then
		echo "selftest: no MAINTAINERS M: $me" >&2
		rc=1
	elif ! apply_cached "$idx" "$p" >/dev/null ||
	     [ "$(git apply --numstat "$p" | awk '$3 == "MAINTAINERS" { print $1 }')" != \
	       "$(sed -n 's/^ MAINTAINERS *| *\([0-9]*\) .*$/\1/p' "$p")" ]; then
		echo "selftest: $p does not apply, or its diffstat is not its diff's" >&2
		rc=1
	fi
	rm -f "$idx"
	if grep -rl '^Signed-off-by: ' "$d/unsigned" >&2; then
		echo "selftest: signed off without SIGNOFF=1" >&2
		rc=1
	fi
	if (UMEM_SUBMITTER=$BUILD_IDENT write "$d/build") >/dev/null 2>&1 ||
	   (UMEM_SUBMITTER= GIT_CONFIG_GLOBAL=/dev/null GIT_CONFIG_SYSTEM=/dev/null HOME=$d \
	    write "$d/nobody") >/dev/null 2>&1; then
		echo "selftest: the build identity, or no identity, was accepted as the submitter" >&2
		rc=1
	fi
	rm -rf "$d"
	[ $rc = 0 ] && echo "    $n patches from and signed off by a submitter alone, none without SIGNOFF=1; none without a submitter"
	return $rc
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
selftest) selftest ;;
selftest-base) selftest_base ;;
base) upstream_base -v >/dev/null ;;
*) die "usage: $0 check | patches NAME... | write [DIR] | base | selftest | selftest-base" ;;
esac
