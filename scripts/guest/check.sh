# SPDX-License-Identifier: GPL-2.0
# Guest side of `make check`: load each module (its KUnit suites run at
# load) and unload it; the load/unload steps are a KTAP suite of their own.
. /umem/lib.sh

step insmod_umem_dmabuf_rs ktap_insmod importer umem_dmabuf_rs.ko $UMEM_MODARGS
step rmmod_umem_dmabuf_rs rmmod umem_dmabuf_rs
step insmod_dmabuf_exporter_rs ktap_insmod exporter dmabuf_exporter_rs.ko
step exporter_userspace_test ktap_run exporter_user /umem/bin/exp_test
step rmmod_dmabuf_exporter_rs rmmod dmabuf_exporter_rs
steps_report guest_steps
