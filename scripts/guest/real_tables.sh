# SPDX-License-Identifier: GPL-2.0
# Guest side of make check's real-tables boot: the test kernel without
# CONFIG_DMABUF_DEBUG (kernel/real-tables.config), where an importer maps
# the exporters' own tables rather than copies, as on distribution kernels.
# The system heap hands every map of an attachment its one table, so this
# is where a window left trimmed, a table mapped twice or a restore of the
# wrong lengths shows (KASAN, DMA-API debugging, kmemleak as in every boot).
# KUnit's filter (qemu.sh's command line, check.sh) keeps only the heap suite.
. /umem/lib.sh

SEED=${UMEM_FUZZ_SEED:-20261130}
OPS=${UMEM_REAL_TABLES_OPS:-4000}
STORM=${UMEM_REAL_TABLES_STORM:-5}
GIDX=$(rxe_setup)
step rxe_device_with_ipv4_gid test -n "$GIDX"
# Both importers, through ib_core, on a buffer of the system heap
# (kunit/heap_test.c; 19 pages, as the suite expects).
KTAP_INSMOD="/umem/bin/heap_exec 77824 insmod" \
	step insmod_umem_dmabuf_rs_heap ktap_insmod heap umem_dmabuf_rs.ko kunit=1 \
	kunit_heap_fd=@FD@ $UMEM_MODARGS
step rmmod_umem_dmabuf_rs rmmod umem_dmabuf_rs
# The uverbs fuzzer and the storm (their heap and vgem buffers are the
# kernel's own exporters), the Rust importer first; the C run must give the
# same outcomes.
step insmod_exporter insmod "$MODDIR/dmabuf_exporter_rs.ko"
for imp in rust c; do
	if [ $imp = rust ]; then
		step insmod_rust_importer insmod "$MODDIR/umem_dmabuf_rs.ko"
		mode=--save
	else
		step rmmod_rust_importer rmmod umem_dmabuf_rs
		mode=--compare
	fi
	step "fuzz_$imp" ktap_run "real_tables_fuzz+$imp" \
		rxe_dmabuf_fuzz rxe0 "$GIDX" "$imp" fuzz "$SEED" "$OPS" "$mode" /tmp/fuzz-rust.txt
	step "storm_$imp" ktap_run "real_tables_storm+$imp" \
		rxe_dmabuf_fuzz rxe0 "$GIDX" "$imp" storm "$STORM"
done
step rmmod_exporter rmmod dmabuf_exporter_rs
steps_report guest_steps_real_tables
