# SPDX-License-Identifier: GPL-2.0
# Guest side of `make check`: load the module (its KUnit suites run at load),
# then unload it.
. /umem/lib.sh

ktap_insmod kunit umem_dmabuf_rs.ko $UMEM_MODARGS || echo "insmod umem_dmabuf_rs.ko failed"
rmmod umem_dmabuf_rs || echo "rmmod umem_dmabuf_rs failed"
