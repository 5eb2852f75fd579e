// SPDX-License-Identifier: GPL-2.0
/*
 * rxe_resend DEV GIDX TIMEOUT SECS: the reproducer of "RDMA/rxe: do not
 * resend a request that was acknowledged in full" without dma-buf MRs, so
 * that it runs on pristine 7.3.4 too. A loopback RC QP pair on DEV streams
 * 4 KiB RDMA WRITEs (MTU 1024: four packets each), 64 outstanding, from one
 * ordinary MR into another for SECS seconds, with the retransmit timeout
 * exponent TIMEOUT (4.096 us << TIMEOUT, at least one jiffy): a timeout
 * shorter than the responder's turnaround under load makes the requester
 * retry while acknowledgments are on their way, the race the fix closes.
 * Prints the stream's outcome; exits 0 when every WRITE completed, 3 when
 * one completed in error (unfixed: IBV_WC_REM_INV_REQ_ERR, status 9), 1 on
 * a set-up failure. For make check-fixes (scripts/guest/fixes.sh).
 */
#include "rdma_user.h"
#include <infiniband/verbs.h>

#define LEN 4096
#define DEPTH 64
#define SLOTS 256

int main(int argc, char **argv)
{
	struct ibv_qp_init_attr qa = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = DEPTH, .max_recv_wr = 1,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_qp *qp_a = NULL, *qp_b = NULL;
	struct ibv_mr *src_mr, *dst_mr;
	struct rdma_stream stream;
	struct ibv_context *ctx;
	unsigned char *src, *dst;
	struct ibv_cq *cq = NULL;
	struct ibv_pd *pd = NULL;
	union ibv_gid gid;
	double ns;
	int gidx;

	if (argc != 5) {
		fprintf(stderr, "usage: %s DEV GIDX TIMEOUT SECS\n", argv[0]);
		return 1;
	}
	gidx = atoi(argv[2]);
	setenv("RXE_TEST_QP_TIMEOUT", argv[3], 1);
	ctx = open_device_named(argv[1]);
	if (ctx)
		pd = ibv_alloc_pd(ctx);
	if (pd)
		cq = ibv_create_cq(ctx, 2 * DEPTH, NULL, NULL, 0);
	qa.send_cq = cq;
	qa.recv_cq = cq;
	if (cq) {
		qp_a = ibv_create_qp(pd, &qa);
		qp_b = ibv_create_qp(pd, &qa);
	}
	src = aligned_alloc(4096, SLOTS * LEN);
	dst = aligned_alloc(4096, SLOTS * LEN);
	if (!qp_a || !qp_b || !src || !dst || ibv_query_gid(ctx, 1, gidx, &gid) ||
	    connect_qp(qp_a, qp_b->qp_num, &gid, gidx) ||
	    connect_qp(qp_b, qp_a->qp_num, &gid, gidx)) {
		fprintf(stderr, "rxe_resend: setting up a loopback QP pair on %s failed\n",
			argv[1]);
		return 1;
	}
	memset(src, 0x5a, SLOTS * LEN);
	src_mr = ibv_reg_mr(pd, src, SLOTS * LEN, IBV_ACCESS_LOCAL_WRITE);
	dst_mr = ibv_reg_mr(pd, dst, SLOTS * LEN,
			    IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	if (!src_mr || !dst_mr) {
		fprintf(stderr, "rxe_resend: ibv_reg_mr failed\n");
		return 1;
	}
	stream = (struct rdma_stream) {
		.qp = qp_a, .cq = cq,
		.laddr = (uintptr_t)src, .lkey = src_mr->lkey,
		.raddr = (uintptr_t)dst, .rkey = dst_mr->rkey,
		.size = SLOTS * LEN,
	};
	ns = rdma_stream_run(&stream, IBV_WR_RDMA_WRITE, LEN, DEPTH, atof(argv[4]) * 1e3);
	if (!ns) {
		printf("rxe_resend: a WRITE of the stream failed (above)\n");
		return 3;
	}
	printf("rxe_resend: every WRITE completed, %.0f us each\n", ns / 1e3);
	ibv_dereg_mr(src_mr);
	ibv_dereg_mr(dst_mr);
	verbs_close(qp_a, qp_b, cq, pd, ctx);
	return 0;
}
