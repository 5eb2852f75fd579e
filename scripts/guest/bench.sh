# SPDX-License-Identifier: GPL-2.0
# Guest side of `make bench` (scripts/bench.sh).
# 1. In-kernel: loads umem_dmabuf_rs.ko with the benchmark's parameters; the
#    kernel command line filters KUnit down to the bench suite.
# 2. Through uverbs on rxe (rxe_dmabuf_fuzz regbench): REG_DMABUF_MR +
#    dereg, dynamic and pinned, and the migrate + re-map round trip, for each
#    size, in rounds of C, Rust, Rust, C blocks
#    (the Rust module loaded for the middle two). umem.bench_uverbs=ROUNDS,
#    ITERS on the command line (ITERS: registrations per block up to 16
#    pages, fewer above, at least 2).
# 2b. A concurrent registration storm through uverbs (rxe_dmabuf_fuzz
#    stormbench): WORKERS processes register and deregister while the
#    shared buffers migrate and RDMA WRITEs run, SECS per block, in rounds of
#    C, Rust, Rust, C blocks; umem.bench_storm=ROUNDS,SECS,WORKERS.
# 3. The data path on rxe (rxe_dmabuf_bench datapath): WRITE/READ bandwidth
#    and 8-byte WRITE latency into an ordinary MR, dynamic and pinned
#    dma-buf MRs on the exporter's system memory, a dynamic one on its
#    device memory and one on a system dma-heap buffer, on each importer,
#    with a null arm (the module loaded with register=0) and block orders
#    drawn per round; umem.bench_dp=ROUNDS,MS, umem.bench_seed=SEED.
# 4. WRITE bandwidth into a dynamic dma-buf MR while the buffer migrates
#    0, 1, 10 and 100 times per second (rxe_dmabuf_bench migrate), on each
#    importer; umem.bench_mig=ROUNDS,MS.
# 5. Revocation latency (rxe_dmabuf_bench revoke), on each importer: ROUNDS
#    blocks of MS ms of WRITEs into a dynamic MR whose buffer migrates every
#    10 ms, then 20 * ROUNDS revocations of a mapped MR on a revocable
#    buffer; umem.bench_revoke=ROUNDS,MS.
# 6. Scale: registration against buffer size and against bytes already
#    registered, invalidation storms (see below).
# Every block prints BENCH, DPBENCH, REVLAT, SCALE, FLAT or ISTORM lines that the host turns
# into the report.
. /umem/lib.sh

if cmdline_value umem.profile >/dev/null; then
	# The in-kernel part under perf (cpu-clock sampling on all CPUs), then
	# the kernel symbols with the most samples, C and Rust side by side.
	# perf resolves a module's symbols only if it was loaded before the
	# recording started: load it with a one-operation run, set the real
	# parameters, and run the suite again through KUnit's debugfs file.
	echo 0 >/proc/sys/kernel/kptr_restrict
	step insmod_umem_dmabuf_rs_quick insmod "$MODDIR/umem_dmabuf_rs.ko" kunit=1 \
		bench_rounds=1 bench_iters=1 bench_max_entries=1
	for kv in $UMEM_MODARGS; do
		echo "${kv#*=}" >"/sys/module/umem_dmabuf_rs/parameters/${kv%%=*}"
	done
	echo "umem-ktap-start bench" >/dev/kmsg
	perf record -q -a -e cpu-clock -o /tmp/perf.data -- \
		sh -c 'echo 1 >/sys/kernel/debug/kunit/umem_dmabuf_rs_bench/run'
	step profiled_bench test -s /tmp/perf.data
	echo "@@UMEM-KTAP-BEGIN bench@@"
	dmesg | sed -n "/umem-ktap-start bench\$/,\$p" | sed 1d
	echo "@@UMEM-KTAP-END@@"
	echo "@@UMEM-PERF@@"
	perf report -q -i /tmp/perf.data --stdio --no-children --sort dso,sym \
		--kallsyms=/proc/kallsyms 2>/dev/null | head -n 80
	echo "@@UMEM-PERF-END@@"
else
	step insmod_umem_dmabuf_rs_bench ktap_insmod bench umem_dmabuf_rs.ko kunit=1 $UMEM_MODARGS
fi
step rmmod_umem_dmabuf_rs rmmod umem_dmabuf_rs

rounds=3
iters=32
if v=$(cmdline_value umem.bench_uverbs); then
	rounds=${v%%,*}
	iters=${v#*,}
fi

GIDX=$(rxe_setup)
step rxe_device_with_ipv4_gid test -n "$GIDX"
step insmod_exporter insmod "$MODDIR/dmabuf_exporter_rs.ko"

n=0
block() {	# block IMPORTER ROUND
	local kind pages it
	for kind in 0 1 2; do
		for pages in 1 16 256 4096 65536; do
			it=$((iters * 16 / pages))
			[ "$it" -ge 2 ] || it=2
			n=$((n + 1))
			step "regbench_${n}_$1" ktap_run bench_uverbs rxe_dmabuf_fuzz rxe0 "$GIDX" \
				"$1" regbench "$pages" "$it" "$kind" "$2"
		done
	done
}
# interleave BLOCK ROUNDS TAG: ROUNDS rounds of BLOCK c, BLOCK rust twice
# (the Rust module loaded for them), BLOCK c; BLOCK is called with the
# importer and the round.
interleave() {
	local r=0
	while [ "$r" -lt "$2" ]; do
		"$1" c "$r"
		step "insmod_rust_$3_$r" insmod "$MODDIR/umem_dmabuf_rs.ko"
		"$1" rust "$r"
		"$1" rust "$r"
		step "rmmod_rust_$3_$r" rmmod umem_dmabuf_rs
		"$1" c "$r"
		r=$((r + 1))
	done
}
interleave block "$rounds" round

storm=3,10,4
v=$(cmdline_value umem.bench_storm) && storm=$v
s_rounds=${storm%%,*}
s_secs=${storm#*,}
s_workers=${s_secs#*,}
s_secs=${s_secs%%,*}
r=0
while [ "$r" -lt "$s_rounds" ]; do
	step "stormbench_c_$r" ktap_run bench_uverbs rxe_dmabuf_fuzz rxe0 "$GIDX" \
		c stormbench "$s_workers" "$s_secs" "$r"
	step "insmod_rust_storm_$r" insmod "$MODDIR/umem_dmabuf_rs.ko"
	step "stormbench_rust_$r" ktap_run bench_uverbs rxe_dmabuf_fuzz rxe0 "$GIDX" \
		rust stormbench "$s_workers" "$s_secs" "$r"
	step "stormbench_rust2_$r" ktap_run bench_uverbs rxe_dmabuf_fuzz rxe0 "$GIDX" \
		rust stormbench "$s_workers" "$s_secs" "$r"
	step "rmmod_rust_storm_$r" rmmod umem_dmabuf_rs
	step "stormbench_c2_$r" ktap_run bench_uverbs rxe_dmabuf_fuzz rxe0 "$GIDX" \
		c stormbench "$s_workers" "$s_secs" "$r"
	r=$((r + 1))
done

dp=3,300
mig=2,2000
seed=1
v=$(cmdline_value umem.bench_dp) && dp=$v
v=$(cmdline_value umem.bench_mig) && mig=$v
v=$(cmdline_value umem.bench_seed) && seed=$v
# dpbench LABEL ROUND [migrate]: one data-path process (or, with
# "migrate", one migration process) labelled LABEL (c, rust, null or
# warmup: the report reads the first three) for round ROUND.
dpbench() {
	if [ -z "${3:-}" ]; then
		step "datapath_$1_$2" ktap_run bench_datapath \
			rxe_dmabuf_bench rxe0 "$GIDX" "$1" datapath 1 "${dp#*,}" 0 "$2"
	else
		step "migrate_$1_$2" ktap_run bench_migrate \
			rxe_dmabuf_bench rxe0 "$GIDX" "$1" migrate 1 "${mig#*,}" 0 "$2"
	fi
}
# draw N: a seeded pseudo-random bit for the N-th choice of block order
# (a multiplicative hash of the seed and N: the same bits for the same seed).
draw() {
	local h=$(( (seed * 2654435761 + $1 * 40503 + 1) & 0xffffffff ))
	h=$(( ((h ^ (h >> 13)) * 1540483477) & 0xffffffff ))
	h=$(( h ^ (h >> 15) ))
	echo $(( (h >> 7) & 1 ))
}
# arm SIDE ROUND ORDER [migrate]: four blocks, the Rust module loaded for
# SIDE's two: C, SIDE, SIDE, C when ORDER is 0, else SIDE, C, C, SIDE, so
# that neither side always runs first. SIDE rust has the Rust importer
# registered; SIDE null loads the same module with register=0, so that
# both sides run the C importer and only the swap (a load and an unload of
# the module, and its presence) differs: the method's own bias.
arm() {
	local args=
	[ "$1" = null ] && args=register=0
	if [ "$3" = 0 ]; then
		dpbench c "$2" ${4:-}
		step "insmod_$1_$2${4:+_$4}" insmod "$MODDIR/umem_dmabuf_rs.ko" $args
		dpbench "$1" "$2" ${4:-}
		dpbench "$1" "$2" ${4:-}
		step "rmmod_$1_$2${4:+_$4}" rmmod umem_dmabuf_rs
		dpbench c "$2" ${4:-}
	else
		step "insmod_$1_$2${4:+_$4}_a" insmod "$MODDIR/umem_dmabuf_rs.ko" $args
		dpbench "$1" "$2" ${4:-}
		step "rmmod_$1_$2${4:+_$4}_a" rmmod umem_dmabuf_rs
		dpbench c "$2" ${4:-}
		dpbench c "$2" ${4:-}
		step "insmod_$1_$2${4:+_$4}_b" insmod "$MODDIR/umem_dmabuf_rs.ko" $args
		dpbench "$1" "$2" ${4:-}
		step "rmmod_$1_$2${4:+_$4}_b" rmmod umem_dmabuf_rs
	fi
}
# The data path: an untimed warm-up process, then per round the importers
# (arm rust) and the null arm (arm null, its rounds numbered from 1000 so
# that its C blocks stay apart), each in an order drawn for it. The
# migration run has no null arm (its blocks are long; its baseline, a
# dynamic MR that does not migrate, calls the importer anyway).
if [ "${dp%%,*}" -gt 0 ]; then
	dpbench warmup 0
	r=0
	while [ "$r" -lt "${dp%%,*}" ]; do
		arm rust "$r" "$(draw $((2 * r)))"
		arm null $((1000 + r)) "$(draw $((2 * r + 1)))"
		r=$((r + 1))
	done
fi
r=0
while [ "$r" -lt "${mig%%,*}" ]; do
	arm rust "$r" "$(draw $((1000 + r)))" migrate
	r=$((r + 1))
done
rev=5,1000
v=$(cmdline_value umem.bench_revoke) && rev=$v
if [ "${rev%%,*}" -gt 0 ]; then
	step revoke_c ktap_run bench_revoke \
		rxe_dmabuf_bench rxe0 "$GIDX" c revoke "${rev%%,*}" "${rev#*,}"
	step insmod_rust_revoke insmod "$MODDIR/umem_dmabuf_rs.ko"
	step revoke_rust ktap_run bench_revoke \
		rxe_dmabuf_bench rxe0 "$GIDX" rust revoke "${rev%%,*}" "${rev#*,}"
	step rmmod_rust_revoke rmmod umem_dmabuf_rs
fi
# 6. Scale, in rounds of C, Rust, Rust, C blocks (rxe_dmabuf_bench scale
#    and flat, one process each per block, after an untimed small one):
#    an MR's registration, first access and deregistration against buffer
#    size, on the exporter (one-page and 2 MiB entries), the system heap
#    and udmabuf (over a memfd, and over one on huge pages); the same for a
#    small MR against bytes already registered. umem.bench_scale=ROUNDS,
#    ITERS,MAXMB (ROUNDS 0 leaves both out), umem.bench_flat=PROBES,TOTALMB.
#    Then invalidation storms (rxe_dmabuf_bench istorm), K MRs on one
#    buffer, in rounds of their own: umem.bench_istorm=ROUNDS,ITERS,KMAX.
scale=2,8,1024
flat=32,1024
istorm=7,8,256
v=$(cmdline_value umem.bench_scale) && scale=$v
v=$(cmdline_value umem.bench_flat) && flat=$v
v=$(cmdline_value umem.bench_istorm) && istorm=$v
n=0
scale_block() {	# scale_block IMPORTER ROUND
	local s=${scale#*,}
	n=$((n + 1))
	step "scale_${n}_$1" ktap_run bench_scale \
		rxe_dmabuf_bench rxe0 "$GIDX" "$1" scale "${s%%,*}" "${s#*,}" 0 "$2"
	step "flat_${n}_$1" ktap_run bench_flat \
		rxe_dmabuf_bench rxe0 "$GIDX" "$1" flat "${flat%%,*}" "${flat#*,}" 0 "$2"
}
istorm_block() {	# istorm_block IMPORTER ROUND
	local s=${istorm#*,}
	n=$((n + 1))
	step "istorm_${n}_$1" ktap_run bench_istorm \
		rxe_dmabuf_bench rxe0 "$GIDX" "$1" istorm "${s%%,*}" "${s#*,}" 0 "$2"
}
# Huge pages for the udmabufs on them (the fast kernel has hugetlbfs),
# released after the rounds.
hp=${scale##*,}
hp=$((hp / 2 + 8))
huge_pages() {	# huge_pages N: reserves N huge pages, all of them
	echo "$1" >/proc/sys/vm/nr_hugepages && [ "$(cat /proc/sys/vm/nr_hugepages)" = "$1" ]
}
if [ "${scale%%,*}" != 0 ]; then
	step reserve_huge_pages huge_pages "$hp"
	step scale_warmup ktap_run bench_scale_warmup \
		rxe_dmabuf_bench rxe0 "$GIDX" warmup scale 2 16 0 0
fi
interleave scale_block "${scale%%,*}" scale
[ "${scale%%,*}" = 0 ] || step release_huge_pages huge_pages 0
interleave istorm_block "${istorm%%,*}" istorm
step rmmod_exporter rmmod dmabuf_exporter_rs
steps_report guest_steps
