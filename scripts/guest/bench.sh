# SPDX-License-Identifier: GPL-2.0
# Guest side of `make bench` (scripts/bench.sh): loads umem_dmabuf_rs.ko with
# the benchmark's parameters; the kernel command line filters KUnit down to
# the bench suite, whose BENCH lines the host turns into the report.
. /umem/lib.sh

step insmod_umem_dmabuf_rs_bench ktap_insmod bench umem_dmabuf_rs.ko $UMEM_MODARGS
step rmmod_umem_dmabuf_rs rmmod umem_dmabuf_rs
steps_report guest_steps
