# SPDX-License-Identifier: GPL-2.0
# Shared settings for the project's scripts. Sourced, never executed.

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# The kernel cache lives outside the work tree so that a fresh clone reuses it.
UMEM_CACHE=${UMEM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/umem-dmabuf-rs}
# The kernel the series is for (UMEM_KVER; one so far):
#   7.3   linux-source-7.3 from Debian's trixie-backports, fetched into the
#         cache by version and sha256 without touching the system's apt
#         sources (fetch_kernel_deb), LLVM 19 (7.3 needs LLVM >= 17)
UMEM_KVER=${UMEM_KVER:-7.3}
case "$UMEM_KVER" in
7.3)
	KSRC=$UMEM_CACHE/src-7.3	# git tree: pristine Debian source + patches/
	KPKG=linux-source-7.3
	KPKG_VERSION=7.3.4-1~bpo13+1
	KPKG_SUITE=trixie-backports
	KDEB_SHA256=703e369ddd4cce971452f5a593ee55df3a5c10c83caf0fa0df039633ed181ee3
	KTARBALL=$UMEM_CACHE/deb/linux-source-7.3.tar.xz
	KLLVM=-19
	KSUFFIX=-7.3
	;;
*)
	echo "error: UMEM_KVER must be '7.3', not '$UMEM_KVER'" >&2
	exit 1
	;;
esac
KPATCHES=$ROOT/patches/linux-$UMEM_KVER
# The importer module as the kernel build makes it (scripts/intree.sh), in
# the build directory of a kernel with CONFIG_INFINIBAND_UMEM_DMABUF_RUST=m.
INTREE_DIR=drivers/infiniband/core/umem_dmabuf_rs
INTREE_KO=$INTREE_DIR/umem_dmabuf_rs.ko
# The pinned toolchain: rustc from rust-toolchain.toml (exported, since the
# kernel builds run outside this tree, where rustup would not find that
# file), bindgen-cli, and the Debian version of the LLVM packages. All are
# part of the kernel cache key (toolchain_versions); the instruction gate's
# limits were derived with exactly these.
RUST_TOOLCHAIN=$(sed -n 's/^channel *= *"\(.*\)"$/\1/p' "$ROOT/rust-toolchain.toml")
export RUSTUP_TOOLCHAIN=$RUST_TOOLCHAIN
BINDGEN_VERSION=0.73.2
# The rustc of the GCC-built tree (UMEM_KERNEL=gcc): 7.3's minimum
# (scripts/min-tool-version.sh), installed by setup.sh beside the pinned one.
GCC_RUSTC=1.85.0
# The rustc of the fast kernel (UMEM_KERNEL=fast: make demo, make bench and
# the speed gates): the release built on the LLVM of the pinned clang
# (19.1.7), so that Kconfig sees RUSTC_CLANG_LLVM_COMPATIBLE and
# kernel/fast.config's CONFIG_RUST_INLINE_HELPERS inlines rust/helpers/
# into the kernel crate and the modules, as the C callers have them
# inline. Installed by setup.sh; part of that kernel's cache key.
INLINE_RUSTC=1.86.0
LLVM_DEB_VERSION=1:19.1.7-3~deb12u1
LLVM_DEBS=(clang-19 lld-19 llvm-19 libclang-19-dev)
LOGDIR=${UMEM_LOGDIR:-$ROOT/build/logs}
# Outside the tree: Kbuild's "make M=... clean" deletes every *.o and *.a
# below the module's directory, cargo's build-script outputs included.
CARGO_TARGET=$UMEM_CACHE/cargo

export PATH="$HOME/.cargo/bin:$PATH"

# child_cpu_seconds: sets CHILD_CPU to the whole CPU seconds (user +
# system) of the processes this shell has waited for (the shell's own
# "times"; not in a $(...) subshell, which has waited for none).
child_cpu_seconds() {
	local f t m sec
	f=$(mktemp)
	times >"$f"
	CHILD_CPU=0
	for t in $(tail -n 1 "$f"); do
		m=${t%%m*}
		sec=${t#*m}
		sec=${sec%%.*}
		CHILD_CPU=$((CHILD_CPU + m * 60 + 10#$sec))
	done
	rm -f "$f"
}

# phase_mark begin|end NAME: appends "EPOCH begin|end NAME" to $UMEM_PHASES
# (make check: build/results/phases.txt, which scripts/runtimes.py turns
# into the run-time tables), if it is set.
phase_mark() {
	[ -z "${UMEM_PHASES:-}" ] || echo "$(date +%s) $1 $2" >>"$UMEM_PHASES"
}

# record_commit: the short id of the tree's commit, "-dirty" when a tracked
# file differs from it, for the run-time tables of make check and make demo.
record_commit() {
	local c
	c=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null) || c=
	[ -z "$c" ] || [ -z "$(git -C "$ROOT" status --porcelain -uno 2>/dev/null)" ] || c=$c-dirty
	echo "${c:-an unrecorded commit}"
}

# record_machine: the machine a run is timed on, "CORES MODEL" (the
# run-time tables name it: scripts/runtimes.py).
record_machine() {
	local model
	model=$(sed -n '/^model name/{s/^[^:]*: //;p;q}' /proc/cpuinfo) || model=
	echo "$(nproc) ${model:-an unknown CPU}"
}

# copy_sources DEST: a fresh copy of this tree's sources (tracked files
# and new ones git does not ignore; no build output) in DEST, for a build
# that must not touch this tree's objects. Objects built there name DEST's
# files in their dependencies, so make sees a change made in DEST.
copy_sources() {
	rm -rf "$1"
	mkdir -p "$1/build"
	git -C "$ROOT" ls-files -z --cached --others --exclude-standard |
		(cd "$ROOT" && xargs -0 tar -cf - --no-recursion) | tar -C "$1" -xf -
}

# mutant_field NAME FIELD: the value of FIELD (Tree, Importer, Mutant, ...)
# in the header of scripts/mutants/NAME.patch.
mutant_field() {
	sed -n "s/^$2: //p;/^diff --git/q" "$ROOT/scripts/mutants/$1.patch" | head -n 1
}

say() { printf '\033[1m==>\033[0m %s\n' "$*" >&2; }

# verdict_status RC HOST VERDICT: make check's exit status from the
# report's exit status RC, the host checks' record HOST and the report's
# output VERDICT, each judged on its own: a host check recorded "not ok",
# or a closing line that is missing or counts a failure, fails the run
# whatever RC says. When the closing line hides a failure it is followed
# by a corrected one, so the output still ends with "N passed, N failed".
verdict_status() {
	local rc=$1 host=$2 verdict=$3 last failed=0 passed=0 extra
	extra=$(grep -c '^not ok ' "$host" 2>/dev/null) || extra=0
	last=$(tail -n 1 "$verdict" 2>/dev/null)
	if [[ $last =~ ^([0-9]+)\ passed,\ ([0-9]+)\ failed ]]; then
		passed=${BASH_REMATCH[1]} failed=${BASH_REMATCH[2]}
	else
		echo "FAILED: the verdict has no closing line"
		rc=1 extra=$((extra + 1))
	fi
	if [ "$extra" -gt 0 ] && [ "$failed" = 0 ]; then
		grep '^not ok ' "$host" 2>/dev/null | sed 's/^not ok /FAILED: /'
		echo "$passed passed, $extra failed"
		return 1
	fi
	[ "$failed" = 0 ] && [ "$rc" = 0 ] && return 0
	if [ "$failed" = 0 ]; then
		echo "FAILED: the report exited $rc"
		echo "$passed passed, 1 failed"
	fi
	return 1
}
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

# Builds from the one source tree, each with its own O= build directory and
# cache key; UMEM_KERNEL picks one (kernel_vars sets KOUT, KFRAGMENTS,
# KCHECKED: the fragments whose every line must survive olddefconfig,
# KTARGETS: make's targets, none for a whole kernel, and KPRODUCT: what
# the build leaves behind):
#   test     make check: kernel/umem.config + kernel/test.config (lockdep,
#            KASAN, kmemleak, fault injection)
#   fast     make demo and benchmarks: kernel/umem.config + kernel/fast.config
#            (trace events with jump labels, as distributions ship; C
#            helpers inlined into Rust), built with rustc $INLINE_RUSTC
#   drivers  no kernel: the directories of the hardware RDMA drivers of
#            kernel/drivers.config, compiled only (make check)
#   real-tables  make check's real-tables boot: the test kernel without
#            CONFIG_DMABUF_DEBUG (kernel/real-tables.config); a first build
#            starts from a copy of the test kernel's tree (KSEED), so it
#            recompiles only what that option touches (about 2 minutes)
#   series   scripts/kpatch.sh build-each: the test kernel and the drivers
#   gcc      no kernel: the importer's objects (the series' in-tree module)
#            in a tree configured with GCC and rustc $GCC_RUSTC, 7.3's
#            minimum, as distributions build their kernels (Debian's 7.3:
#            GCC, CONFIG_RUST=y, rustc 1.85.1): "make prepare" (the kernel
#            crate) and the module's directory (make check)
#   kcsan    make check-kcsan: kernel/umem.config + kernel/kcsan.config
#   fuzz     make fuzz: the test kernel with KCOV on the code under test
#            (kernel/fuzz.config; KMAKEVARS: make's variables that choose
#            the instrumented objects)
HW_RDMA_DRIVERS=(mlx5/mlx5_ib efa/efa bnxt_re/bnxt_re irdma/irdma mana/mana_ib ionic/ionic_rdma)
kernel_vars() {
	local k=$ROOT/kernel
	KTARGETS=() KMAKEVARS=() KSEED=
	KPRODUCT=arch/x86/boot/bzImage
	case "$1" in
	test)
		KOUT=$UMEM_CACHE/build$KSUFFIX
		KFRAGMENTS=("$k/umem.config" "$k/linux-$UMEM_KVER.config" "$k/test.config")
		;;
	fast)
		KOUT=$UMEM_CACHE/build-fast$KSUFFIX
		KFRAGMENTS=("$k/umem.config" "$k/linux-$UMEM_KVER.config" "$k/fast.config")
		export RUSTUP_TOOLCHAIN=$INLINE_RUSTC
		;;
	drivers)
		KOUT=$UMEM_CACHE/build-drivers$KSUFFIX
		KFRAGMENTS=("$k/umem.config" "$k/linux-$UMEM_KVER.config" "$k/drivers.config"
			    "$k/drivers-only.config")
		KCHECKED=("$k/drivers.config" "$k/drivers-only.config")
		local d
		for d in "${HW_RDMA_DRIVERS[@]}"; do
			KTARGETS+=("drivers/infiniband/hw/${d%/*}/")
		done
		KPRODUCT=drivers/infiniband/hw/${HW_RDMA_DRIVERS[-1]}.o
		return
		;;
	gcc)
		KOUT=$UMEM_CACHE/build-gcc$KSUFFIX
		KFRAGMENTS=("$k/umem.config" "$k/linux-$UMEM_KVER.config")
		KCHECKED=("$k/umem.config" "$k/linux-$UMEM_KVER.config")
		KTARGETS=(prepare "$INTREE_DIR/")
		KPRODUCT=$INTREE_DIR/umem_rs.o
		KLLVM=
		export RUSTUP_TOOLCHAIN=$GCC_RUSTC
		return
		;;
	real-tables)
		KOUT=$UMEM_CACHE/build-real-tables$KSUFFIX
		KSEED=$UMEM_CACHE/build$KSUFFIX
		KFRAGMENTS=("$k/umem.config" "$k/linux-$UMEM_KVER.config" "$k/test.config"
			    "$k/real-tables.config")
		# test.config's CONFIG_DMABUF_DEBUG=y is overridden, on purpose.
		KCHECKED=("$k/umem.config" "$k/linux-$UMEM_KVER.config" "$k/real-tables.config")
		return
		;;
	series)
		KOUT=$UMEM_CACHE/build-series$KSUFFIX
		KFRAGMENTS=("$k/umem.config" "$k/linux-$UMEM_KVER.config" "$k/test.config"
			    "$k/drivers.config")
		;;
	kcsan)
		KOUT=$UMEM_CACHE/build-kcsan$KSUFFIX
		KFRAGMENTS=("$k/umem.config" "$k/linux-$UMEM_KVER.config" "$k/kcsan.config")
		;;
	fuzz)
		KOUT=$UMEM_CACHE/build-fuzz$KSUFFIX
		KFRAGMENTS=("$k/umem.config" "$k/linux-$UMEM_KVER.config" "$k/test.config"
			    "$k/fuzz.config")
		local o
		for o in umem_dmabuf uverbs_std_types_mr rxe_dmabuf rxe_mr dma-buf dma-resv kernel; do
			KMAKEVARS+=("KCOV_INSTRUMENT_$o.o=y")
		done
		;;
	*)
		die "UMEM_KERNEL must be 'test', 'fast', 'drivers', 'gcc', 'real-tables', 'series', 'kcsan' or 'fuzz', not '$1'"
		;;
	esac
	KCHECKED=("${KFRAGMENTS[@]}")
}
UMEM_KERNEL=${UMEM_KERNEL:-test}
kernel_vars "$UMEM_KERNEL"

# Prints the Debian version of the kernel source package, e.g. 7.3.4-1~bpo13+1.
kernel_pkg_version() {
	echo "$KPKG_VERSION"
}

# fetch_kernel_deb: downloads $KPKG=$KPKG_VERSION from $KPKG_SUITE with a
# private apt configuration under the cache (the system's sources stay as
# they are), checks its sha256 and leaves the source tarball at $KTARBALL.
fetch_kernel_deb() {
	[ -f "$KTARBALL" ] && return
	local d=$UMEM_CACHE/deb
	local opts=(-o "Dir::Etc::sourcelist=$d/sources.list" -o Dir::Etc::sourceparts=-
		    -o "Dir::State::Lists=$d/lists" -o "Dir::Cache=$d/cache"
		    -o APT::Get::List-Cleanup=0 -o APT::Sandbox::User=root)
	mkdir -p "$d/lists/partial" "$d/cache/archives/partial"
	echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian $KPKG_SUITE main" \
		>"$d/sources.list"
	say "fetching $KPKG $KPKG_VERSION from Debian's $KPKG_SUITE (167 MB)"
	apt-get -qq "${opts[@]}" update || die "apt-get update of $KPKG_SUITE failed"
	(cd "$d" && rm -f ./*.deb && apt-get -qq "${opts[@]}" download "$KPKG=$KPKG_VERSION") ||
		die "downloading $KPKG=$KPKG_VERSION failed"
	local deb
	deb=$(echo "$d"/*.deb)
	echo "$KDEB_SHA256  $deb" | sha256sum -c --quiet - ||
		die "$deb: sha256 differs from the pinned $KDEB_SHA256"
	dpkg-deb --fsys-tarfile "$deb" | tar -xO "./usr/src/$KPKG.tar.xz" >"$KTARBALL.tmp" ||
		die "extracting $KPKG.tar.xz from $deb failed"
	mv "$KTARBALL.tmp" "$KTARBALL"
	rm -f "$deb"
}

# The patched rdma-core (scripts/rdma-core.sh): source, build, and the
# DESTDIR install that the guest's libibverbs, rxe provider and pyverbs come from.
RCDIR=$UMEM_CACHE/rdma-core
RCSTAGE=$RCDIR/stage

rdma_core_key() {
	{
		echo "recipe 1"
		grep -E '^RC_(NAME|SHA256)=' "$ROOT/scripts/rdma-core.sh"
		sed -n '/^build()/,/^}/p' "$ROOT/scripts/rdma-core.sh"
		cat "$ROOT"/patches/rdma-core/*.patch 2>/dev/null
	} | sha256sum | cut -c1-16
}

# toolchain_versions: the versions of the toolchain actually installed, one
# a line (rustc -vV names its LLVM too).
toolchain_versions() {
	rustc -vV 2>&1
	bindgen --version 2>&1
	dpkg-query -W "${LLVM_DEBS[@]}" 2>&1
}

# toolchain_pinned: fails, saying what differs, unless the installed
# toolchain is the pinned one.
toolchain_pinned() {
	local rc=0 p v
	v=$(rustc --version 2>/dev/null | cut -d' ' -f2)
	[ "$v" = "$RUST_TOOLCHAIN" ] || { echo "rustc is '$v', rust-toolchain.toml pins $RUST_TOOLCHAIN" >&2; rc=1; }
	v=$(bindgen --version 2>/dev/null | cut -d' ' -f2)
	[ "$v" = "$BINDGEN_VERSION" ] || { echo "bindgen is '$v', lib.sh pins $BINDGEN_VERSION" >&2; rc=1; }
	for p in "${LLVM_DEBS[@]}"; do
		v=$(dpkg-query -W -f='${Version}' "$p" 2>/dev/null)
		[ "$v" = "$LLVM_DEB_VERSION" ] ||
			{ echo "$p is '$v', lib.sh pins $LLVM_DEB_VERSION" >&2; rc=1; }
	done
	# The fast kernel's rustc and clang on one LLVM (INLINE_RUSTC).
	v=$(rustc +"$INLINE_RUSTC" -vV 2>/dev/null | sed -n 's/^LLVM version: //p')
	p=$(clang$KLLVM --version 2>/dev/null | sed -n 's/^.*clang version \([0-9.]*\).*$/\1/p')
	[ -n "$v" ] && [ "$v" = "$p" ] ||
		{ echo "rustc $INLINE_RUSTC is on LLVM '$v', clang$KLLVM on '$p': the fast kernel cannot inline the C helpers" >&2; rc=1; }
	return $rc
}

# Everything that decides the content of the built kernel. A change in any of
# these makes scripts/kernel.sh rebuild; nothing else does.
kernel_key() {
	{
		echo "recipe 2 $UMEM_KERNEL"
		echo "kver $UMEM_KVER"
		toolchain_versions
		[ -n "$KLLVM" ] || gcc --version | head -n 1
		[ ${#KTARGETS[@]} = 0 ] || echo "targets ${KTARGETS[*]}"
		[ ${#KMAKEVARS[@]} = 0 ] || echo "make ${KMAKEVARS[*]}"
		kernel_pkg_version
		series_patches | xargs -r cat
		cat "${KFRAGMENTS[@]}"
	} | sha256sum | cut -c1-16
}

# The patches of the kernel series in order, without the cover letter
# (0000-cover-letter.patch: text only, so editing it rebuilds nothing).
series_patches() {
	local p
	for p in "$KPATCHES"/*.patch; do
		case "$p" in
		*/0000-*) ;;
		*) [ ! -e "$p" ] || echo "$p" ;;
		esac
	done
}

# The series alone (scripts/kernel.sh re-applies it only when this changes).
series_key() {
	series_patches | xargs -r cat | sha256sum | cut -c1-16
}

# What $KSRC/.umem-series records once the series is in the kernel source
# tree: the series' key and the tree its HEAD holds.
series_state() {
	echo "$(series_key) $(git_tree "$KSRC" rev-parse 'HEAD^{tree}')"
}

# source_matches_series: the kernel source tree holds exactly what the
# series makes (the recorded HEAD tree, no edit of a tracked file): not a
# tree in the middle of a rebase or with edits not yet exported.
source_matches_series() {
	[ "$(cat "$KSRC/.umem-series" 2>/dev/null)" = "$(series_state)" ] &&
		git_tree "$KSRC" diff --quiet HEAD
}

# The kernel and rdma-core trees are git repositories whose first commit
# (tag "pristine") is the unpacked source and whose series is applied with
# "git am", so that re-applying a changed series gives new timestamps only to
# the files it touches and builds stay incremental.
git_tree() {
	git -C "$1" -c user.name="${BUILD_IDENT% <*}" -c user.email="$(build_email)" \
		-c advice.detachedHead=false "${@:2}"
}

# git_record_pristine DIR MESSAGE: commits all of DIR (forced: a tree's own
# .gitignore may hide parts of it) as the first commit, tagged "pristine".
git_record_pristine() {
	git_tree "$1" init -q
	git_tree "$1" add -f -A
	git_tree "$1" commit -q -m "$2"
	git_tree "$1" tag pristine
	# Commits made in the tree (scripts/kpatch.sh) are the build's, as
	# those "git am" makes: the exported patches carry no author.
	git -C "$1" config user.name "${BUILD_IDENT% <*}"
	git -C "$1" config user.email "$(build_email)"
}

# The identity of the commits in the build trees. The patches in patches/
# carry no author (no From: line): whoever sends them is their author
# (scripts/series.sh write), and "git am" needs one to make a commit.
BUILD_IDENT="umem-build <umem-build@localhost>"
build_email() {
	local e=${BUILD_IDENT##*<}
	echo "${e%>}"
}

# am_patch DIR PATCH: applies PATCH, a git format-patch file without its
# From: line, as a commit of the build identity in DIR.
am_patch() {
	{ head -n 1 "$2"; echo "From: $BUILD_IDENT"; tail -n +2 "$2"; } |
		git_tree "$1" am -q --keep-cr
}

# strip_author FILE...: deletes the From: header line (and its folded
# continuation lines) of each git format-patch FILE; the body is kept.
strip_author() {
	local f
	for f in "$@"; do
		awk 'NR > 1 && !body && /^$/ { body = 1 }
		     !body && /^From: / { skip = 1; next }
		     !body && skip && /^[ \t]/ { next }
		     { skip = 0; print }' "$f" >"$f.tmp" && mv "$f.tmp" "$f"
	done
}

# udp_port_pair: two free UDP ports on 127.0.0.1, picked by the kernel.
udp_port_pair() {
	python3 - <<'PY'
import socket
s = [socket.socket(socket.AF_INET, socket.SOCK_DGRAM) for _ in range(2)]
for x in s:
    x.bind(("127.0.0.1", 0))
print(*(x.getsockname()[1] for x in s))
PY
}

# link_args LOCAL_PORT REMOTE_PORT MAC: the QEMU arguments of a guest's
# second NIC (eth1), on a link to another guest: a dgram netdev pair over
# UDP on 127.0.0.1 (no root, no host bridge).
link_args() {
	printf -- '-netdev dgram,id=w0,local.type=inet,local.host=127.0.0.1,local.port=%s,%s %s' \
		"$1" "remote.type=inet,remote.host=127.0.0.1,remote.port=$2" \
		"-device virtio-net-pci,netdev=w0,mac=$3,bus=sw0p2"
}

# source_worktree DIR: DIR is a git worktree of $KSRC (detached, at
# "pristine" when made). One of a source tree that was made anew (another
# kernel version) is made anew too.
source_worktree() {
	git -C "$1" rev-parse -q --verify pristine >/dev/null 2>&1 && return
	say "a second tree of the kernel source: $1 (a git worktree of $KSRC)"
	rm -rf "$1"
	git_tree "$KSRC" worktree prune
	git_tree "$KSRC" worktree add -q --detach "$1" pristine
}

# git_apply_series DIR PATCHDIR: resets DIR to "pristine" and applies
# PATCHDIR/*.patch in order. A file that ends with the content it had
# before gets its old modification time back: a series rewritten without
# changing what it makes (patches folded, split or reworded) rebuilds
# nothing, and a changed one rebuilds what it changed.
git_apply_series() {
	local p stamps hash mtime path
	stamps=$(mktemp)
	if git_tree "$1" rev-parse -q --verify pristine >/dev/null 2>&1; then
		git_tree "$1" diff --name-only pristine 2>/dev/null |
			while read -r path; do
				[ -f "$1/$path" ] || continue
				printf '%s %s %s\n' "$(git hash-object "$1/$path")" \
					"$(stat -c %.9Y "$1/$path")" "$path"
			done >"$stamps"
	fi
	git_tree "$1" am --abort >/dev/null 2>&1 || true
	git_tree "$1" checkout -q --detach pristine
	git_tree "$1" reset -q --hard pristine
	for p in "$2"/*.patch; do
		# A cover letter (0000-*) has no diff.
		case "$p" in */0000-*) continue ;; esac
		[ -e "$p" ] || continue
		if ! am_patch "$1" "$p" >"$LOGDIR/patch.log" 2>&1; then
			cat "$LOGDIR/patch.log" >&2
			git_tree "$1" am --abort >/dev/null 2>&1 || true
			die "patch does not apply: $(basename "$p")"
		fi
		echo "    applied $(basename "$p")" >&2
	done
	while read -r hash mtime path; do
		if [ -f "$1/$path" ] && [ "$(git hash-object "$1/$path")" = "$hash" ]; then
			touch -m -d "@$mtime" "$1/$path"
		fi
	done <"$stamps"
	rm -f "$stamps"
}

# Runs "$@" with its output in LOG, printing a status line every 20 s
# ($PROGRESS_INTERVAL; stage, elapsed time, objects built so far, of how
# many the last full build had: $PROGRESS_COUNT_FILE, default the kernel's),
# and the log's tail if it fails. Its exit status is the command's.
run_with_progress() {
	local stage=$1 log=$2 count_dir=$3
	shift 3
	local start=$SECONDS rc=0 expect=""
	local countfile=${PROGRESS_COUNT_FILE:-$UMEM_CACHE/objcount}
	[ -f "$countfile" ] && expect=$(cat "$countfile")
	phase_mark begin "$stage"
	"$@" >"$log" 2>&1 &
	local pid=$!
	while kill -0 "$pid" 2>/dev/null; do
		sleep "${PROGRESS_INTERVAL:-20}" &
		wait $! || true
		kill -0 "$pid" 2>/dev/null || break
		local n
		# find exits 1 when a file it was about to visit is gone, which
		# a running build does all the time (its temporary objects); under
		# "set -e -o pipefail" that would end the caller, not the build.
		n=$(find "$count_dir" -name '*.o' 2>/dev/null | wc -l) || true
		printf '    %s: %dm%02ds elapsed, %s objects%s, last: %s\n' \
			"$stage" $(((SECONDS - start) / 60)) $(((SECONDS - start) % 60)) \
			"$n" "${expect:+ of ~$expect}" \
			"$(tail -n 1 "$log" | cut -c1-60)" >&2
	done
	wait "$pid" || rc=$?
	phase_mark end "$stage"
	if [ "$rc" -ne 0 ]; then
		printf 'error: %s failed (exit %d); last lines of %s:\n' "$stage" "$rc" "$log" >&2
		tail -n 40 "$log" >&2
		return "$rc"
	fi
	say "$stage done in $(((SECONDS - start) / 60))m$(((SECONDS - start) % 60))s"
}

# doc_block NAME: the commands of Documentation/install.rst's block NAME
# (on stdin), one a line: the literal block ("::", then lines indented by
# three spaces) that follows the comment line ".. doctest: NAME".
# scripts/doctest.sh (make check) and scripts/check-install.sh run them.
doc_block() {
	awk -v name="$1" '
		$0 == ".. doctest: " name { want = 1; next }
		want && /^::$/ { inside = 1; next }
		inside && /^   / { sub(/^   /, ""); print; seen = 1; next }
		inside && seen && !/^$/ { exit }'
}

# boot_crash_before_job LOG: whether the guest of LOG died of an int3 trap
# in the kernel before its job began (no @@UMEM-GUEST-START marker): QEMU
# TCG, with several vCPUs each translating on its own thread, can run a
# breakpoint that the kernel's patching of a jump label (text_poke_bp) has
# already removed, on a kernel with jump labels (the fast kernel); the
# Oops shows the restored instruction at the trapping address. Nothing of
# the code under test has run then, so qemu.sh boots once more.
boot_crash_before_job() {
	! grep -q '@@UMEM-GUEST-START' "$1" && grep -q 'Oops: int3: ' "$1"
}

# running_case LOG: says what a guest was doing when its serial log LOG
# ended: the test between @@UMEM-KTAP-BEGIN and -END markers, or the module
# whose KUnit suites were loading (umem-ktap-start), or the guest step; or,
# once the job's kernel log dump began (@@UMEM-DMESG-BEGIN@@, whose copies
# of those markers are history), that its job had ended.
running_case() {
	awk '
	/@@UMEM-DMESG-BEGIN@@/ { done = 1 }
	done { next }
	/@@UMEM-KTAP-BEGIN / { c = $0; sub(/.*@@UMEM-KTAP-BEGIN /, "", c); sub(/@@.*/, "", c); what = "test " c }
	/@@UMEM-KTAP-END@@/ { what = "" }
	/umem-ktap-start / { c = $0; sub(/.*umem-ktap-start /, "", c); what = "KUnit suites of " c }
	/^step failed: / { last = $0 }
	END {
		if (done) print "after its job (the kernel log was dumped)"
		else if (what != "") print "running: " what
		else print "between tests" (last != "" ? " (" last ")" : "")
	}' "$1"
}
