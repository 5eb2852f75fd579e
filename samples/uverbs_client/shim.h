/* SPDX-License-Identifier: GPL-2.0 */
/*
 * libibverbs' data-path calls are static inline functions, which have no
 * symbol to bind to; these wrappers give them one.
 */
#ifndef UVERBS_DMABUF_SHIM_H
#define UVERBS_DMABUF_SHIM_H

#include <infiniband/verbs.h>

int shim_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad);
int shim_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad);
int shim_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc);

/*
 * The provider's memory-region object: rdma-core's struct verbs_mr from
 * <infiniband/driver.h>, which is not installed for applications. mr_type
 * is its enum ibv_mr_type, whose fourth value marks a dma-buf MR.
 */
#define SHIM_MR_TYPE_DMABUF_MR 3

struct shim_verbs_mr {
	struct ibv_mr ibv_mr;
	unsigned int mr_type;
	int access;
};

#endif
