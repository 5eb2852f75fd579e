# SPDX-License-Identifier: GPL-2.0
# Guest side of make check-kcsan (scripts/kcsan.sh), on the KCSAN kernel:
# where the importers, rxe and the exporter run concurrently. On the Rust
# importer, then on the C one: the end-to-end tests with their migrations
# under traffic and concurrent moves (rxe_dmabuf_test ... stress), the
# registration storm (workers registering while buffers migrate, WRITEs
# checked, workers killed), and make fuzz's corpus, the C run reproducing
# the Rust run's outcomes. A data race is a kernel report (BUG: KCSAN),
# which the host's verdict fails unless it is a known upstream one.
. /umem/lib.sh

GIDX=$(rxe_setup)
step rxe_device_with_ipv4_gid test -n "$GIDX"
step insmod_exporter insmod $MODDIR/dmabuf_exporter_rs.ko
step insmod_umem_dmabuf_rs insmod $MODDIR/umem_dmabuf_rs.ko
fz="rxe_dmabuf_fuzz rxe0 $GIDX"
step rxe_e2e_rust ktap_run rxe_e2e+rust-importer rxe_dmabuf_test rxe0 "$GIDX" rust stress
step storm_rust ktap_run storm+rust $fz rust storm 10
step replay_rust ktap_run replay+rust $fz rust replay /umem/corpus/* --save /tmp/replay-rust.txt
step rmmod_umem_dmabuf_rs rmmod umem_dmabuf_rs
step rxe_e2e_c ktap_run rxe_e2e+c-importer rxe_dmabuf_test rxe0 "$GIDX" stress
step storm_c ktap_run storm+c $fz c storm 10
step replay_c ktap_run replay+c $fz c replay /umem/corpus/* --compare /tmp/replay-rust.txt
step rmmod_exporter rmmod dmabuf_exporter_rs
steps_report guest_steps
