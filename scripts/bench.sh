#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# `make bench`: the importer's in-kernel costs, C built-in ops against the
# Rust ones, on the kernel without the test kernel's debugging options (the
# fast kernel, as for make demo), in one boot, then the concurrent
# registration storm again in a boot of the test kernel; the results go to build/bench/
# (results.json, results.md, *.png). See Documentation/performance.rst.
#   BENCH_ROUNDS (7), BENCH_ITERS (64), BENCH_MAX_ENTRIES (262144) override
#   the module parameters of the in-kernel run; BENCH_UVERBS_ROUNDS (7) and
#   BENCH_UVERBS_ITERS (64) the uverbs run; BENCH_DP (ROUNDS,MS: 7,150) the
#   data-path run, each round with its null arm (7 rounds at least for its
#   validity to be judged), and BENCH_MIG (2,2000) the migration run (blocks of MS
#   milliseconds); BENCH_SEED (1) draws the rounds' block orders; BENCH_STORM (3,5,4) the concurrent registration storm
#   (ROUNDS,SECS per block,WORKERS); BENCH_REVOKE (5,1000) the revocation
#   latency (ROUNDS,MS; 0,1 leaves it out); BENCH_SCALE (2,8,1024) the scale
#   rows (ROUNDS,ITERS,MAXMB: MRs over buffers of 2 MiB up to MAXMB; 0,1,2
#   leaves them out), BENCH_FLAT (32,1024: PROBES,TOTALMB, the small MR's
#   registrations per level and the bytes registered around it) and
#   BENCH_ISTORM (7,8,256: ROUNDS,ITERS,KMAX, the invalidation storms'
#   rounds, moves per storm and most MRs on the moving buffer; 0,1,1
#   leaves them out). The fast kernel's guest gets BENCH_MEM (4G) of memory. BENCH_PROFILE=1 runs the in-kernel part under perf record
#   (cpu-clock sampling, all CPUs) and prints the hottest kernel symbols
#   (build/logs/bench-serial.log, between @@UMEM-PERF@@ markers).
set -euo pipefail
export UMEM_KERNEL=fast
. "$(dirname "$0")/lib.sh"

rounds=${BENCH_ROUNDS:-7}
iters=${BENCH_ITERS:-64}
max=${BENCH_MAX_ENTRIES:-262144}
out=$ROOT/build/bench
mkdir -p "$out"

"$ROOT/scripts/kernel.sh"
"$ROOT/scripts/rdma-core.sh"
"$ROOT/scripts/module.sh"
log=$LOGDIR/bench-serial.log
profile=
if [ "${BENCH_PROFILE:-0}" = 1 ]; then
	command -v perf >/dev/null || die "BENCH_PROFILE=1 needs perf(1): apt-get install linux-perf"
	export UMEM_PERF=1
	profile=umem.profile=1
fi
say "benchmark: $rounds rounds of C,Rust,Rust,C blocks, tables up to $max entries"
UMEM_MEM=${BENCH_MEM:-4G} UMEM_TIMEOUT=${UMEM_TIMEOUT:-5400} "$ROOT/scripts/qemu.sh" bench "$log" quiet \
	kunit.filter_glob='umem_dmabuf_rs_bench*' \
	"umem.modargs=bench_rounds=$rounds,bench_iters=$iters,bench_max_entries=$max,bench_gate_rounds=${BENCH_GATE_ROUNDS:-15}" \
	"umem.bench_uverbs=${BENCH_UVERBS_ROUNDS:-7},${BENCH_UVERBS_ITERS:-64}" \
	"umem.bench_dp=${BENCH_DP:-7,150}" "umem.bench_mig=${BENCH_MIG:-2,2000}" \
	"umem.bench_seed=${BENCH_SEED:-1}" \
	"umem.bench_storm=${BENCH_STORM:-3,5,4}" "umem.bench_revoke=${BENCH_REVOKE:-5,1000}" \
	"umem.bench_scale=${BENCH_SCALE:-2,8,1024}" "umem.bench_flat=${BENCH_FLAT:-32,1024}" \
	"umem.bench_istorm=${BENCH_ISTORM:-7,8,256}" $profile
python3 "$ROOT/scripts/report.py" --kunit-py "$KSRC/tools/testing/kunit/kunit.py" \
	--require-ktap --log "$log" --quiet >"$LOGDIR/bench-report.txt" || {
	cat "$LOGDIR/bench-report.txt"
	die "the benchmark boot failed (serial log: $log)"
}
# The storm once more on the test kernel (KASAN, lockdep, kmemleak, DMA-API
# debugging: what developers and CI run; make check gates its ratio), in a
# boot of its own that runs nothing else.
slog=$LOGDIR/bench-storm-test-serial.log
UMEM_KERNEL=test "$ROOT/scripts/kernel.sh"
UMEM_KERNEL=test "$ROOT/scripts/module.sh"
say "benchmark: the concurrent registration storm on the test kernel"
UMEM_KERNEL=test UMEM_TIMEOUT=${UMEM_TIMEOUT:-5400} "$ROOT/scripts/qemu.sh" bench "$slog" quiet \
	kunit.filter_glob='umem_dmabuf_rs_bench*' \
	"umem.modargs=bench_rounds=0,bench_gate_rounds=0" "umem.bench_uverbs=0,1" \
	"umem.bench_dp=0,1" "umem.bench_mig=0,1" "umem.bench_storm=${BENCH_STORM:-3,5,4}" \
	"umem.bench_revoke=0,1" "umem.bench_scale=0,1,2" "umem.bench_istorm=0,1,1"
python3 "$ROOT/scripts/report.py" --kunit-py "$KSRC/tools/testing/kunit/kunit.py" \
	--require-ktap --log "$slog" --quiet >"$LOGDIR/bench-storm-test-report.txt" || {
	cat "$LOGDIR/bench-storm-test-report.txt"
	die "the test kernel's storm boot failed (serial log: $slog)"
}
# Debian's python3, which has python3-matplotlib (scripts/setup.sh), even
# when another python3 comes first in PATH.
commit=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)
git -C "$ROOT" diff --quiet HEAD -- rust samples scripts patches kernel 2>/dev/null || commit="$commit+"
method="rounds=$rounds iters=$iters max_entries=$max uverbs=${BENCH_UVERBS_ROUNDS:-7},${BENCH_UVERBS_ITERS:-64}"
method="$method dp=${BENCH_DP:-7,150} mig=${BENCH_MIG:-2,2000} seed=${BENCH_SEED:-1}"
method="$method storm=${BENCH_STORM:-3,5,4} revoke=${BENCH_REVOKE:-5,1000}"
method="$method scale=${BENCH_SCALE:-2,8,1024} flat=${BENCH_FLAT:-32,1024} istorm=${BENCH_ISTORM:-7,8,256}"
rm -f "$out/results.json" "$out/results-invalid.json"
# Exit status 3: the data path's comparison is not valid (nothing is
# published); 4: a gate of the scale part failed (the measurements are
# published, then make bench fails).
rc=0
/usr/bin/python3 "$ROOT/scripts/bench_report.py" --rst "$out/tables.rst" "$commit" \
	--method "$method" --storm-test "$slog" "$log" "$out" "$(kernel_pkg_version)" || rc=$?
[ "$rc" != 3 ] ||
	die "the benchmark's own validity check failed (its null arm, or the ordinary MR, shows a bias; $out/results-invalid.json): Documentation/data/bench-tables.rst was left alone"
[ "$rc" = 0 ] || [ "$rc" = 4 ] || die "bench_report.py failed (exit status $rc)"
# Documentation/performance.rst includes the tables from
# Documentation/data/bench-tables.rst, which each valid run rewrites
# (review and commit the change).
doc=$ROOT/Documentation/data/bench-tables.rst
mkdir -p "$ROOT/Documentation/data"
# The dataset behind the tables, published with them (valid runs only);
# the tables are made from it alone, as make check checks.
cp "$out/results.json" "$ROOT/Documentation/data/bench-results.json"
/usr/bin/python3 "$ROOT/scripts/bench_report.py" --page "$out/results.json" >"$doc"
say "$doc and Documentation/data/bench-results.json regenerated (commit $commit)"
[ "$rc" = 0 ] || die "a gate of the scale part failed (GATE FAILED lines above; $out/results.json)"
