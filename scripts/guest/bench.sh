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
# Every block prints BENCH lines that the host turns into the report.
. /umem/lib.sh

step insmod_umem_dmabuf_rs_bench ktap_insmod bench umem_dmabuf_rs.ko $UMEM_MODARGS
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
r=0
while [ "$r" -lt "$rounds" ]; do
	block c "$r"
	step "insmod_rust_round_$r" insmod "$MODDIR/umem_dmabuf_rs.ko" bench_max_entries=0
	block rust "$r"
	block rust "$r"
	step "rmmod_rust_round_$r" rmmod umem_dmabuf_rs
	block c "$r"
	r=$((r + 1))
done
step rmmod_exporter rmmod dmabuf_exporter_rs
steps_report guest_steps
