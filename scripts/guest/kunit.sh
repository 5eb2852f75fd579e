# SPDX-License-Identifier: GPL-2.0
# Guest side of `make kunit`: the KUnit suites of both modules and nothing
# else (kunit.filter_glob= on the kernel command line narrows them).
. /umem/lib.sh

step insmod_umem_dmabuf_rs ktap_insmod importer umem_dmabuf_rs.ko kunit=1 $UMEM_MODARGS
step insmod_exporter ktap_insmod exporter+rust-importer dmabuf_exporter_rs.ko \
	expect_importer=module require_devmem=1
step rmmod_exporter rmmod dmabuf_exporter_rs
step rmmod_umem_dmabuf_rs rmmod umem_dmabuf_rs
steps_report guest_steps
