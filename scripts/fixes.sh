#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# make check-fixes: the fixes series (patches/linux-7.3/series/1-fixes.cover)
# shown at work. Eight kernels, built from one git worktree of the kernel
# source into one O= directory, each stage on top of the last (Kbuild
# rebuilds only what a stage's patches change), each cached by its key:
#   pristine  Debian's 7.3.4, no patch: every reproducer must show its bug
#   only-N    pristine + fix N of 1-fixes alone (N = 1..5): that fix's
#             reproducer, run alone, must come out clean, with a kernel
#             log free of warnings and DMA-API errors
#   fixes     pristine + 1-fixes: every reproducer must come out clean
#   rxe       pristine + 1-fixes + 2-rdma-umem + 3-rxe, no Rust: the same,
#             and rxe's dma-buf MRs on the built-in C importer alone pass
#             rdma-core's DmaBuf tests on udmabuf and system-heap buffers
# Configuration: kernel/umem.config + kernel/fixes.config (DMA-API
# debugging, kmemleak, lockdep; no Rust, no KASAN). The reproducers are the
# C module samples/fixes_repro (built against each stage) and its user
# programs; scripts/guest/fixes.sh runs them and reports what it saw, and
# this script decides per stage. Each stage boots once alone (fixes 1, 2,
# 3 and 5) and once as two guests on a link (fix 4, rxe_deadqp); an only-N
# stage boots once, for its own case. Ends with "N passed, N failed".
#
#   fixes.sh          build what is not cached, boot every stage
#   fixes.sh build    build only
#   fixes.sh boot STAGE [CMDLINE...]  boot one built stage and judge it
#   fixes.sh pair STAGE [CMDLINE...]  the same for its two-guest case
#   fixes.sh judge STAGE LOG           judge a serial log as STAGE's
#   fixes.sh judge STAGE SLOG CLOG SRC CRC  the same for a pair
set -euo pipefail
. "$(dirname "$0")/lib.sh"

STAGES=(pristine only-1 only-2 only-3 only-4 only-5 fixes rxe)
# The reproducer of each fix of 1-fixes, in the series' order.
FIX_CASES=(phys_vec_table_leak udmabuf_segment_size system_heap_segment_size
	   dead_qp_packets_freed rxe_resend_after_full_ack)
WT=$UMEM_CACHE/src-fixes$KSUFFIX
OUT=$UMEM_CACHE/build-fixes$KSUFFIX
CFG=$UMEM_CACHE/config-fixes$KSUFFIX
PRODUCTS=$UMEM_CACHE/fixes$KSUFFIX
MODSRC=$ROOT/samples/fixes_repro
FRAGS=("$ROOT/kernel/umem.config" "$ROOT/kernel/linux-$UMEM_KVER.config" "$ROOT/kernel/fixes.config")
# umem.config's CONFIG_RUST=y is overridden by fixes.config, on purpose.
CHECKED=("$ROOT/kernel/linux-$UMEM_KVER.config" "$ROOT/kernel/fixes.config")

stage_series() {
	case "$1" in
	pristine) ;;
	only-*) echo "fix ${1#only-} of 1-fixes" ;;
	fixes) echo 1-fixes ;;
	rxe) echo 1-fixes 2-rdma-umem 3-rxe ;;
	esac
}

stage_patches() {
	local s
	case "$1" in
	only-[1-5]) "$ROOT/scripts/series.sh" patches 1-fixes | sed -n "${1#only-}p" ;;
	*)
		s=$(stage_series "$1")
		[ -z "$s" ] || "$ROOT/scripts/series.sh" patches $s
		;;
	esac
}

# only_case STAGE: the reproducer an only-N stage runs (nothing for others).
only_case() {
	case "$1" in
	only-[1-5]) echo "${FIX_CASES[${1#only-} - 1]}" ;;
	esac
}

# What decides a stage's kernel and module.
stage_key() {
	{
		echo "recipe 1 $1"
		toolchain_versions
		kernel_pkg_version
		stage_patches "$1" | xargs -r cat
		cat "${FRAGS[@]}"
		cat "$MODSRC"/Kbuild "$MODSRC"/*.c
	} | sha256sum | cut -c1-16
}

cached() {
	[ "$(cat "$PRODUCTS/$1/key" 2>/dev/null)" = "$(stage_key "$1")" ] &&
		[ -f "$PRODUCTS/$1/bzImage" ] && [ -f "$PRODUCTS/$1/fixes_repro.ko" ]
}

# checkout STAGE: the worktree holds pristine plus the stage's patches.
# Files that do not differ keep their timestamps, so the build after it is
# incremental.
checkout() {
	local p
	git_tree "$WT" am --abort >/dev/null 2>&1 || true
	git_tree "$WT" checkout -q -f --detach pristine
	for p in $(stage_patches "$1"); do
		am_patch "$WT" "$p" >"$LOGDIR/fixes-patch.log" 2>&1 ||
			{ cat "$LOGDIR/fixes-patch.log" >&2; die "$(basename "$p") does not apply"; }
	done
}

configure() {
	local f
	mkdir -p "$CFG" "$OUT"
	{
		make -s -C "$WT" O="$CFG" LLVM=$KLLVM tinyconfig &&
		(cd "$WT" && scripts/kconfig/merge_config.sh -m -O "$CFG" "$CFG/.config" \
			kernel/configs/kvm_guest.config "${FRAGS[@]}") &&
		make -s -C "$WT" O="$CFG" LLVM=$KLLVM olddefconfig
	} >"$LOGDIR/config-fixes.log" 2>&1 || die "configuring the fixes kernel failed (see $LOGDIR/config-fixes.log)"
	for f in "${CHECKED[@]}"; do
		"$ROOT/scripts/check-config.sh" "$f" "$CFG/.config"
	done
	cmp -s "$CFG/.config" "$OUT/.config" || cp "$CFG/.config" "$OUT/.config"
}

build_stage() {
	local s=$1 mod=$ROOT/build/fixes_repro-$1 series
	if cached "$s"; then
		say "$s kernel for make check-fixes cached ($(stage_key "$s"))"
		return
	fi
	source_worktree "$WT"
	series=$(stage_series "$s")
	[ -n "$(only_case "$s")" ] || series=${series// / + }
	say "check-fixes: the $s kernel (pristine${series:+ + $series})"
	checkout "$s"
	configure
	PROGRESS_COUNT_FILE=$UMEM_CACHE/objcount-fixes$KSUFFIX \
		run_with_progress "$s kernel build" "$LOGDIR/kernel-build-fixes-$s.log" "$OUT" \
		make -C "$WT" O="$OUT" LLVM=$KLLVM -j"$(nproc)"
	find "$OUT" -name '*.o' | wc -l >"$UMEM_CACHE/objcount-fixes$KSUFFIX" || true
	# The module, built against this stage's tree.
	rm -rf "$mod"
	mkdir -p "$mod"
	cp "$MODSRC"/Kbuild "$MODSRC"/*.c "$mod/"
	make -C "$WT" O="$OUT" LLVM=$KLLVM M="$mod" modules >"$LOGDIR/fixes_repro-$s.log" 2>&1 ||
		{ tail -20 "$LOGDIR/fixes_repro-$s.log"; die "samples/fixes_repro does not build on the $s kernel"; }
	mkdir -p "$PRODUCTS/$s"
	cp "$OUT/arch/x86/boot/bzImage" "$PRODUCTS/$s/bzImage"
	cp "$mod/fixes_repro.ko" "$PRODUCTS/$s/fixes_repro.ko"
	stage_key "$s" >"$PRODUCTS/$s/key"
}

build_all() {
	"$ROOT/scripts/setup.sh"
	"$ROOT/scripts/kernel.sh" --source
	local s
	for s in "${STAGES[@]}"; do
		build_stage "$s"
	done
}

PASSED=0
FAILED=0
result() {	# result OK NAME TEXT
	if [ "$1" = 1 ]; then
		PASSED=$((PASSED + 1))
		echo "ok $2: $3"
	else
		FAILED=$((FAILED + 1))
		echo "not ok $2: $3"
	fi
}

# The reproducers' cases, and on the rxe stage the DmaBuf tests too.
REPRO_CASES=(phys_vec_table_leak udmabuf_segment_size system_heap_segment_size
	     rxe_resend_after_full_ack)
RXE_CASES=(rxe_dmabuf_mr_udmabuf rxe_dmabuf_mr_heap)

# judge STAGE LOG: what the guest saw against what the stage must show.
judge() {
	local s=$1 log=$2 c want line seen kernlog problems cases=("${REPRO_CASES[@]}")
	want=clean
	[ "$s" != pristine ] || want=bug
	[ -z "$(only_case "$s")" ] || cases=("$(only_case "$s")")
	for c in "${cases[@]}"; do
		line=$(sed -n "s/^@@UMEM-FIXES $c \(.*\)@@\$/\1/p" "$log" | tail -n 1)
		seen=${line%% *}
		result "$([ "$seen" = "$want" ] && echo 1)" "$s/$c" "${line:-no result} (must be $want)"
	done
	if [ "$s" = rxe ]; then
		for c in "${RXE_CASES[@]}"; do
			line=$(sed -n "s/^@@UMEM-FIXES $c \(.*\)@@\$/\1/p" "$log" | tail -n 1)
			result "$([ "${line%% *}" = pass ] && echo 1)" "$s/$c" "${line:-no result}"
		done
	fi
	# A fixed kernel's log holds no warning, lockdep report or DMA-API
	# error at all; pristine's holds the reproducers' (not judged).
	[ "$s" != pristine ] || return 0
	kernlog=$(sed -n '/@@UMEM-DMESG-BEGIN@@/,/@@UMEM-DMESG-END@@/p' "$log")
	# (DMA-API debugging's boot lines, "preallocated N debug entries" and
	# "debugging enabled", are no errors; a boot that runs no reproducer
	# clearing the log before it, an only-N stage's, still has them.)
	problems=$(grep -E 'WARNING:|BUG:|Oops|INFO: possible|inconsistent lock state|circular locking|DMA-API: ' \
		<<<"$kernlog" | grep -vE 'DMA-API: (preallocated [0-9]+ debug entries|debugging enabled)' |
		head -n 5 || true)
	result "$([ -z "$problems" ] && echo 1)" "$s/kernel_log_clean" "${problems:-no warning, lockdep report or DMA-API error}"
	line=$(sed -n 's/^@@UMEM-DMA-API-ERRORS \([0-9]*\)@@$/\1/p' "$log")
	result "$([ "$line" = 0 ] && echo 1)" "$s/dma_api_error_count" "DMA-API debugging counted ${line:-nothing} errors (must be 0)"
}

boot_stage() {
	local s=$1 log=$LOGDIR/fixes-$1-serial.log c
	c=$(only_case "$1")
	shift
	if UMEM_BZIMAGE=$PRODUCTS/$s/bzImage UMEM_EXTRA_KO=$PRODUCTS/$s/fixes_repro.ko \
		UMEM_TIMEOUT=1800 "$ROOT/scripts/qemu.sh" fixes "$log" "umem.fixes_stage=$s" \
		${c:+umem.fixes_only=$c} "$@"; then
		judge "$s" "$log"
	else
		result 0 "$s/boot" "the guest did not finish (see $log)"
	fi
}

# boot_pair STAGE: fix 4's case, two guests of STAGE on a link. The bug is
# read from the server's serial console, since an unfixed server may hang
# after its warnings ("the receiving side stops", the fix's message): it is
# stopped after UMEM_STALL (90 s) of silence. On pristine the server's log
# must show the warnings; on the fixed kernels both guests must finish with
# no warning or lockdep report at all.
DEAD_QP_WARNING='WARNING: .*page_pool_put_unrefed_netmem|WARNING: .*__local_bh_enable_ip|inconsistent lock state'
boot_pair() {
	local s=$1 slog=$LOGDIR/fixes-$1-server-serial.log clog=$LOGDIR/fixes-$1-client-serial.log
	local p1 p2 src=0 crc=0
	shift
	read -r p1 p2 < <(udp_port_pair)
	UMEM_QEMU_ARGS=$(link_args "$p1" "$p2" 52:54:00:00:00:01) UMEM_BZIMAGE=$PRODUCTS/$s/bzImage \
		UMEM_SMP=1 UMEM_TIMEOUT=1200 UMEM_STALL=${UMEM_STALL:-90} "$ROOT/scripts/qemu.sh" fixes "$slog" \
		"umem.fixes_stage=$s" umem.node=server "$@" >"$LOGDIR/fixes-$s-server.out" 2>&1 &
	local spid=$!
	UMEM_QEMU_ARGS=$(link_args "$p2" "$p1" 52:54:00:00:00:02) UMEM_BZIMAGE=$PRODUCTS/$s/bzImage \
		UMEM_SMP=1 UMEM_TIMEOUT=1200 UMEM_STALL=${UMEM_STALL:-90} "$ROOT/scripts/qemu.sh" fixes "$clog" \
		"umem.fixes_stage=$s" umem.node=client "$@" || crc=1
	wait $spid || src=1
	judge_pair "$s" "$slog" "$clog" "$src" "$crc"
}

# judge_pair STAGE SERVER_LOG CLIENT_LOG SERVER_STATUS CLIENT_STATUS: the
# verdict on fix 4's two guests (statuses: 0 when the guest finished).
judge_pair() {
	local s=$1 slog=$2 clog=$3 src=$4 crc=$5 warn problems line
	warn=$(grep -aE "$DEAD_QP_WARNING" "$slog" | head -n 3 | sed 's/^\[ *[0-9.]*\] //' | tr '\n' ';' || true)
	if [ "$s" = pristine ]; then
		result "$([ -n "$warn" ] && echo 1)" "$s/dead_qp_packets_freed" \
			"${warn:-no warning on the server}${warn:+ (the server $([ $src = 0 ] && echo finished || echo hung after it))} (must warn)"
		return
	fi
	line=$(sed -n 's/^@@UMEM-FIXES dead_qp_packets_freed \(.*\)@@$/\1/p' "$slog" | tail -n 1)
	result "$([ $src = 0 ] && [ $crc = 0 ] && [ -z "$warn" ] && [ "${line%% *}" = clean ] && echo 1)" \
		"$s/dead_qp_packets_freed" "${line:-no result}; guests $([ $src$crc = 00 ] && echo finished || echo "did not finish (see $slog, $clog)")"
	problems=$(sed -n '/@@UMEM-DMESG-BEGIN@@/,/@@UMEM-DMESG-END@@/p' "$slog" "$clog" |
		grep -E 'WARNING:|BUG:|Oops|INFO: possible|inconsistent lock state|circular locking' |
		head -n 3 || true)
	result "$([ -z "$problems" ] && grep -q '@@UMEM-DMESG-END@@' "$slog" && grep -q '@@UMEM-DMESG-END@@' "$clog" && echo 1)" \
		"$s/two_node_kernel_logs_clean" "${problems:-no warning or lockdep report on either guest}"
}

# The guest's programs (scripts/module.sh builds the same ones for make
# check) and rdma-core's tests.
guest_programs() {
	mkdir -p "$ROOT/build/guest-bin"
	gcc -O2 -Wall -Wextra -Werror -static -o "$ROOT/build/guest-bin/fixes_repro_user" \
		"$MODSRC/user/fixes_repro_user.c"
	local p
	for p in rxe_resend rxe_deadqp; do
		gcc -O2 -Wall -Wextra -Werror -I"$ROOT/include/uapi" -I"$ROOT/samples/include" \
			-o "$ROOT/build/guest-bin/$p" "$MODSRC/user/$p.c" -libverbs
	done
	"$ROOT/scripts/rdma-core.sh"
}

mkdir -p "$LOGDIR"
case "${1:-}" in
build)
	build_all
	;;
judge)
	# fixes.sh judge STAGE LOG, or STAGE SERVER_LOG CLIENT_LOG SERVER_STATUS
	# CLIENT_STATUS for fix 4's pair: the verdict on serial logs (runner
	# self-test).
	if [ $# = 6 ]; then
		judge_pair "${@:2}"
	else
		judge "$2" "$3"
	fi
	echo "$PASSED passed, $FAILED failed"
	[ "$FAILED" = 0 ]
	;;
pair)
	# fixes.sh pair STAGE [CMDLINE...]: fix 4's two guests of one stage.
	[ -e "$PRODUCTS/${2:-none}/key" ] || die "usage: $0 pair STAGE (a built one of: ${STAGES[*]})"
	guest_programs
	boot_pair "${@:2}"
	echo "$PASSED passed, $FAILED failed"
	[ "$FAILED" = 0 ]
	;;
boot)
	# fixes.sh boot STAGE [CMDLINE...]: one stage's kernel, judged.
	[ -e "$PRODUCTS/${2:-none}/key" ] || die "usage: $0 boot STAGE (a built one of: ${STAGES[*]})"
	guest_programs
	boot_stage "${@:2}"
	echo "$PASSED passed, $FAILED failed"
	[ "$FAILED" = 0 ]
	;;
"")
	build_all
	guest_programs
	for s in "${STAGES[@]}"; do
		case "$(only_case "$s")" in
		"") boot_stage "$s"; boot_pair "$s" ;;
		dead_qp_packets_freed) boot_pair "$s" ;;
		*) boot_stage "$s" ;;
		esac
	done
	echo "$PASSED passed, $FAILED failed"
	[ "$FAILED" = 0 ]
	;;
*)
	sed -n '3,28p' "$0"
	exit 2
	;;
esac
