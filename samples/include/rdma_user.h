/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Raw uverbs and exporter requests shared by the guest's RDMA test programs:
 * UVERBS_METHOD_REG_DMABUF_MR with all nine attributes (what
 * ibv_reg_dmabuf_mr() sends), MR destruction by handle, buffers from the
 * movable exporter (/dev/dmabuf_exporter_rs) and from udmabuf, and a
 * loopback RC connection.
 */
#ifndef RDMA_USER_H
#define RDMA_USER_H

#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>
#include <infiniband/verbs.h>
#include <linux/udmabuf.h>
#include <rdma/ib_user_ioctl_cmds.h>
#include <rdma/ib_user_ioctl_verbs.h>
#include <rdma/rdma_user_ioctl_cmds.h>

#include "dmabuf_exporter_rs.h"
#include "exp_user.h"

struct dmr {
	__u32 handle, lkey, rkey;
};

/* Fills the header of a request for a method of the MR object. */
static inline void uv_mr_request(struct ib_uverbs_ioctl_hdr *hdr, size_t len,
				 __u16 method, __u16 num_attrs)
{
	memset(hdr, 0, len);
	hdr->length = len;
	hdr->object_id = UVERBS_OBJECT_MR;
	hdr->method_id = method;
	hdr->num_attrs = num_attrs;
	/* ib_core checks it against the device's driver. */
	hdr->driver_id = RDMA_DRIVER_RXE;
}

/*
 * REG_DMABUF_MR on the uverbs file @cmd_fd in protection domain @pd_handle;
 * 0 or an errno.
 */
static inline int uv_reg_dmabuf_mr(int cmd_fd, __u32 pd_handle, __u64 offset,
				   __u64 length, __u64 iova, int fd,
				   __u32 access, struct dmr *mr)
{
	struct {
		struct ib_uverbs_ioctl_hdr hdr;
		struct ib_uverbs_attr attrs[9];
	} req;
	struct ib_uverbs_attr *a = req.attrs;

	uv_mr_request(&req.hdr, sizeof(req), UVERBS_METHOD_REG_DMABUF_MR, 9);
	a[0].attr_id = UVERBS_ATTR_REG_DMABUF_MR_HANDLE;	/* idr, new */
	a[1].attr_id = UVERBS_ATTR_REG_DMABUF_MR_PD_HANDLE;
	a[1].data = pd_handle;
	a[2].attr_id = UVERBS_ATTR_REG_DMABUF_MR_OFFSET;
	a[2].len = sizeof(__u64);
	a[2].data = offset;
	a[3].attr_id = UVERBS_ATTR_REG_DMABUF_MR_LENGTH;
	a[3].len = sizeof(__u64);
	a[3].data = length;
	a[4].attr_id = UVERBS_ATTR_REG_DMABUF_MR_IOVA;
	a[4].len = sizeof(__u64);
	a[4].data = iova;
	a[5].attr_id = UVERBS_ATTR_REG_DMABUF_MR_FD;	/* PTR_IN u32 */
	a[5].len = sizeof(__u32);
	a[5].data = (__u32)fd;
	a[6].attr_id = UVERBS_ATTR_REG_DMABUF_MR_ACCESS_FLAGS;
	a[6].len = sizeof(__u32);
	a[6].data = access;
	a[7].attr_id = UVERBS_ATTR_REG_DMABUF_MR_RESP_LKEY;
	a[7].len = sizeof(mr->lkey);
	a[7].data = (uintptr_t)&mr->lkey;
	a[8].attr_id = UVERBS_ATTR_REG_DMABUF_MR_RESP_RKEY;
	a[8].len = sizeof(mr->rkey);
	a[8].data = (uintptr_t)&mr->rkey;
	if (ioctl(cmd_fd, RDMA_VERBS_IOCTL, &req))
		return errno;
	mr->handle = a[0].data;
	return 0;
}

/* Destroys the MR with handle mr->handle; 0 or an errno. */
static inline int uv_dereg_mr(int cmd_fd, const struct dmr *mr)
{
	struct {
		struct ib_uverbs_ioctl_hdr hdr;
		struct ib_uverbs_attr attrs[1];
	} req;

	uv_mr_request(&req.hdr, sizeof(req), UVERBS_METHOD_MR_DESTROY, 1);
	req.attrs[0].attr_id = UVERBS_ATTR_DESTROY_MR_HANDLE;
	req.attrs[0].data = mr->handle;
	return ioctl(cmd_fd, RDMA_VERBS_IOCTL, &req) ? errno : 0;
}

/*
 * A new buffer of the exporter behind @expdev: @flags DMABUF_EXP_F_*, @chunks
 * the sizes in pages of its table's entries (NULL: one page each). Returns
 * the dma-buf fd, or -1 with the errno in *err.
 */
static inline int exp_create_chunks(int expdev, __u64 size, __u32 flags,
				    const __u32 *chunks, __u32 nchunks, int *err)
{
	struct dmabuf_exp_create c = {
		.version = DMABUF_EXP_VERSION, .flags = flags, .size = size,
		.chunks = (uintptr_t)chunks, .nchunks = chunks ? nchunks : 0,
	};

	*err = ioctl(expdev, DMABUF_EXP_IOC_CREATE, &c) ? errno : 0;
	return *err ? -1 : c.fd;
}

/* Moves buffer @fd; the copy completes after @delay ms. 0 or an errno. */
static inline int exp_migrate_fd(int expdev, int fd, __u32 delay, __u32 flags)
{
	struct dmabuf_exp_migrate m = {
		.version = DMABUF_EXP_VERSION, .fd = fd, .delay_ms = delay,
		.flags = flags,
	};

	return ioctl(expdev, DMABUF_EXP_IOC_MIGRATE, &m) ? errno : 0;
}

/* Makes later pins and maps of buffer @fd fail with these errnos (0: not). */
static inline int exp_inject_fd(int expdev, int fd, __u32 pin_errno, __u32 map_errno)
{
	struct dmabuf_exp_inject i = {
		.version = DMABUF_EXP_VERSION, .fd = fd, .pin_errno = pin_errno,
		.map_errno = map_errno,
	};

	return ioctl(expdev, DMABUF_EXP_IOC_INJECT, &i) ? errno : 0;
}

/*
 * Reads (@write 0) or writes @len bytes at @offset of buffer @fd through the
 * exporter's own mapping (DMABUF_EXP_IOC_RW), not through a CPU mapping of
 * the dma-buf. 0 or an errno.
 */
static inline int exp_rw_fd(int expdev, int fd, __u64 offset, void *data, __u64 len,
			    int write)
{
	struct dmabuf_exp_rw rw = {
		.version = DMABUF_EXP_VERSION, .fd = fd, .offset = offset, .len = len,
		.data = (uintptr_t)data, .flags = write ? DMABUF_EXP_RW_F_WRITE : 0,
	};

	return ioctl(expdev, DMABUF_EXP_IOC_RW, &rw) ? errno : 0;
}

/* The exporter's counters of buffer @fd (zeroed if @fd is not one). */
static inline struct dmabuf_exp_stats exp_stats_fd(int expdev, int fd)
{
	struct dmabuf_exp_stats s = { .version = DMABUF_EXP_VERSION, .fd = fd };

	if (ioctl(expdev, DMABUF_EXP_IOC_STATS, &s))
		memset(&s, 0, sizeof(s));
	return s;
}

/*
 * A udmabuf over a memfd of @size bytes made with memfd_create() flags
 * @memfd_flags besides MFD_ALLOW_SEALING (MFD_HUGETLB: on huge pages); *map
 * is its CPU mapping.
 */
static inline int udmabuf_create_flags(size_t size, unsigned int memfd_flags,
				       unsigned char **map)
{
	struct udmabuf_create c = { 0 };
	int dev, memfd, fd;

	*map = MAP_FAILED;
	memfd = memfd_create("rdma_user", MFD_ALLOW_SEALING | memfd_flags);
	if (memfd < 0)
		return -1;
	if (ftruncate(memfd, size) || fcntl(memfd, F_ADD_SEALS, F_SEAL_SHRINK) < 0) {
		close(memfd);
		return -1;
	}
	dev = open("/dev/udmabuf", O_RDWR);
	if (dev < 0) {
		close(memfd);
		return -1;
	}
	c.memfd = memfd;
	c.size = size;
	c.flags = UDMABUF_FLAGS_CLOEXEC;
	fd = ioctl(dev, UDMABUF_CREATE, &c);
	close(dev);
	*map = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, memfd, 0);
	close(memfd);
	if (*map == MAP_FAILED) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

/* A udmabuf over a memfd of @size bytes; *map is its CPU mapping. */
static inline int udmabuf_create(size_t size, unsigned char **map)
{
	return udmabuf_create_flags(size, 0, map);
}

/*
 * Moves RC QP @qp to RTS, connected to QP @dest behind GID @gid (index @gidx
 * of port 1), with @rd_atomic RDMA READs (and atomics) outstanding in each
 * direction. The retransmit timeout is 4.3 s: a responder re-mapping a
 * dma-buf MR waits for the exporter's copy fence, which under TCG can exceed
 * shorter timers; RXE_TEST_QP_TIMEOUT overrides it (scripts/stress.sh).
 * The retry count is 7, which rxe (like the IB spec for the RNR count) takes
 * as "retry forever": a peer that vanished is retried without end.
 * RXE_TEST_QP_RETRY sets a finite count, after which the QP fails with
 * IBV_WC_RETRY_EXC_ERR.
 */
static inline int connect_qp_rd(struct ibv_qp *qp, __u32 dest, union ibv_gid *gid,
				int gidx, __u8 rd_atomic)
{
	const char *timeout = getenv("RXE_TEST_QP_TIMEOUT");
	const char *retry = getenv("RXE_TEST_QP_RETRY");
	struct ibv_qp_attr a;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			    IBV_ACCESS_REMOTE_READ;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			  IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
		return -1;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = dest;
	a.rq_psn = 1;
	a.max_dest_rd_atomic = rd_atomic;
	a.min_rnr_timer = 1;
	a.ah_attr.is_global = 1;
	a.ah_attr.grh.dgid = *gid;
	a.ah_attr.grh.sgid_index = gidx;
	a.ah_attr.grh.hop_limit = 1;
	a.ah_attr.port_num = 1;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
			  IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
			  IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
		return -1;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = timeout ? atoi(timeout) : 20;
	a.retry_cnt = retry ? atoi(retry) : 7;
	a.rnr_retry = 7;
	a.sq_psn = 1;
	a.max_rd_atomic = rd_atomic;
	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT |
			     IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			     IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
}

/* connect_qp_rd() with one READ or atomic outstanding. */
static inline int connect_qp(struct ibv_qp *qp, __u32 dest, union ibv_gid *gid,
			     int gidx)
{
	return connect_qp_rd(qp, dest, gid, gidx, 1);
}

/*
 * Posts one signaled work request @op of @len bytes from @laddr/@lkey to
 * @raddr/@rkey; 0 or ibv_post_send()'s error.
 */
static inline int post_rdma(struct ibv_qp *qp, enum ibv_wr_opcode op, __u64 laddr,
			    __u32 lkey, __u32 len, __u64 raddr, __u32 rkey)
{
	struct ibv_sge sge = { .addr = laddr, .length = len, .lkey = lkey };
	struct ibv_send_wr wr = {
		.sg_list = &sge, .num_sge = 1, .opcode = op,
		.send_flags = IBV_SEND_SIGNALED,
	}, *bad;

	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	return ibv_post_send(qp, &wr, &bad);
}

/* CLOCK_MONOTONIC in nanoseconds. */
static inline double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

/*
 * Waiting without a deadline. A wait for completions ends in failure when
 * the RDMA device has made no progress for a stall interval, not when a
 * total time has run out: slow is not stuck. A 32 MiB transfer that takes
 * a minute on a slow machine still receives packets every millisecond; a
 * stuck one (a responder that cannot map, a peer that is gone, a QP in the
 * error state) receives none. Progress is what rxe's hw_counters show:
 * received packets less those the responder found to be duplicates. A
 * retransmission that reaches a responder still busy with the original
 * counts as progress until that responder sees it as a duplicate, so a
 * responder blocked for longer than the retransmit timeout is caught by the
 * case-level watchdog (ktap_watch) instead.
 *
 * The stall interval is $RDMA_TEST_STALL seconds (default 60; a healthy
 * transfer under TCG with KASAN has no gap longer than a fence wait of the
 * exporter, at most 10 s).
 */
#define RDMA_STALL_DEFAULT 60

struct rdma_progress {
	char rcvd[160], dup[160];	/* the counters' sysfs files */
	long long seen;			/* rcvd_pkts - duplicate_request */
	double since;			/* when seen last changed (s) */
	double next;			/* when to read the counters again (s) */
	double stall;			/* the stall interval (s) */
};

/* CLOCK_MONOTONIC in seconds. */
static inline double now_s(void)
{
	return now_ns() / 1e9;
}

static inline long long read_counter(const char *path)
{
	long long v = -1;
	FILE *f = fopen(path, "r");

	if (f) {
		if (fscanf(f, "%lld", &v) != 1)
			v = -1;
		fclose(f);
	}
	return v;
}

static inline long long rdma_progress_read(const struct rdma_progress *p)
{
	return read_counter(p->rcvd) - read_counter(p->dup);
}

/* The stall interval in seconds ($RDMA_TEST_STALL, or the default). */
static inline double rdma_stall_interval(void)
{
	const char *v = getenv("RDMA_TEST_STALL");

	return v && atof(v) > 0 ? atof(v) : RDMA_STALL_DEFAULT;
}

/* Starts a new wait: progress is measured from now. */
static inline void rdma_progress_restart(struct rdma_progress *p)
{
	p->seen = rdma_progress_read(p);
	p->since = now_s();
	p->next = p->since + 0.25;
}

/* Starts watching device @dev (port 1); the clock starts now. */
static inline void rdma_progress_init(struct rdma_progress *p, const char *dev)
{
	snprintf(p->rcvd, sizeof(p->rcvd),
		 "/sys/class/infiniband/%s/ports/1/hw_counters/rcvd_pkts", dev);
	snprintf(p->dup, sizeof(p->dup),
		 "/sys/class/infiniband/%s/ports/1/hw_counters/duplicate_request", dev);
	p->stall = rdma_stall_interval();
	rdma_progress_restart(p);
}

/*
 * Called while waiting (as often as one likes: the counters are read
 * every 250 ms). Returns 0 while the device makes progress, otherwise the
 * seconds without any, once they reach the stall interval.
 */
static inline double rdma_progress_stalled(struct rdma_progress *p)
{
	double t = now_s();
	long long v;

	if (t < p->next)
		return 0;
	p->next = t + 0.25;
	v = rdma_progress_read(p);
	if (v != p->seen) {
		p->seen = v;
		p->since = t;
		return 0;
	}
	return t - p->since >= p->stall ? t - p->since : 0;
}

#define RDMA_STREAM_BATCH 16

/*
 * One side of a stream of RDMA operations: the QP and CQ, the local buffer
 * and the remote one (both at least @size bytes; message k uses slot k of
 * the buffers, modulo their size).
 */
struct rdma_stream {
	struct ibv_qp *qp;
	struct ibv_cq *cq;
	__u64 laddr, raddr;
	__u32 lkey, rkey;
	size_t size;
};

static inline int rdma_stream_post(const struct rdma_stream *s, enum ibv_wr_opcode op,
				   size_t len, unsigned long k)
{
	unsigned long off = k % (s->size / len) * len;

	return post_rdma(s->qp, op, s->laddr + off, s->lkey, len, s->raddr + off, s->rkey);
}

/*
 * Streams @op messages of @len bytes through @s, @depth outstanding, for @ms
 * milliseconds. Returns the ns per completed message, or 0 when a work
 * request failed (its status is printed as a KTAP diagnostic) or no
 * message completed for the stall interval (rdma_stall_interval()).
 */
static inline double rdma_stream_run(const struct rdma_stream *s, enum ibv_wr_opcode op,
				     size_t len, int depth, double ms)
{
	double start = now_ns(), end = start + ms * 1e6, now = start, last = start;
	double stall = rdma_stall_interval() * 1e9;
	unsigned long posted = 0, done = 0;
	struct ibv_wc wc[RDMA_STREAM_BATCH];
	int i, n;

	for (; posted < (unsigned long)depth; posted++)
		if (rdma_stream_post(s, op, len, posted))
			return 0;
	while (done < posted) {
		n = ibv_poll_cq(s->cq, RDMA_STREAM_BATCH, wc);
		if (n < 0)
			return 0;
		now = now_ns();
		if (n)
			last = now;
		if (!n && now - last > stall) {
			printf("    # %s of %zu bytes: no completion for %.0f s\n",
			       op == IBV_WR_RDMA_READ ? "READ" : "WRITE", len, stall / 1e9);
			return 0;
		}
		for (i = 0; i < n; i++) {
			if (wc[i].status != IBV_WC_SUCCESS) {
				printf("    # %s of %zu bytes: completion status %d\n",
				       op == IBV_WR_RDMA_READ ? "READ" : "WRITE", len,
				       wc[i].status);
				return 0;
			}
			done++;
			if (now >= end)
				continue;
			if (rdma_stream_post(s, op, len, posted))
				return 0;
			posted++;
		}
	}
	return (now - start) / done;
}

/* The RDMA device named @name, opened; NULL if there is none. */
static inline struct ibv_context *open_device_named(const char *name)
{
	struct ibv_device **list;
	struct ibv_context *c = NULL;
	int i, n;

	list = ibv_get_device_list(&n);
	for (i = 0; list && i < n && !c; i++)
		if (!strcmp(ibv_get_device_name(list[i]), name))
			c = ibv_open_device(list[i]);
	if (list)
		ibv_free_device_list(list);
	return c;
}

/*
 * rxe's parameter that makes dma-buf MRs revocable pinned ones (read at
 * registration; over dmabuf_pinned).
 */
#define RXE_REVOCABLE_PARAM "/sys/module/rdma_rxe/parameters/dmabuf_revocable"

/* Writes @val to the file @path (a module parameter); 0 or -1. */
static inline int write_file(const char *path, const char *val)
{
	FILE *f = fopen(path, "w");
	int ok = f && fputs(val, f) >= 0;

	if (f && fclose(f))
		ok = 0;
	return ok ? 0 : -1;
}

/*
 * Opens the RDMA device @name with a PD and a CQ of @cqe entries on it; 0,
 * or -1 with what was made left in the pointers (NULL the rest) for
 * verbs_close().
 */
static inline int verbs_open(const char *name, int cqe, struct ibv_context **ctx,
			     struct ibv_pd **pd, struct ibv_cq **cq)
{
	*pd = NULL;
	*cq = NULL;
	*ctx = open_device_named(name);
	if (*ctx)
		*pd = ibv_alloc_pd(*ctx);
	if (*pd)
		*cq = ibv_create_cq(*ctx, cqe, NULL, NULL, 0);
	return *cq ? 0 : -1;
}

/* Destroys what is set of a loopback pair's verbs objects, in order. */
static inline void verbs_close(struct ibv_qp *qa, struct ibv_qp *qb, struct ibv_cq *cq,
			       struct ibv_pd *pd, struct ibv_context *ctx)
{
	if (qa)
		ibv_destroy_qp(qa);
	if (qb)
		ibv_destroy_qp(qb);
	if (cq)
		ibv_destroy_cq(cq);
	if (pd)
		ibv_dealloc_pd(pd);
	if (ctx)
		ibv_close_device(ctx);
}

/* The test pattern @seed over @len bytes at @p. */
static inline void fill(unsigned char *p, size_t len, unsigned int seed)
{
	size_t i;

	for (i = 0; i < len; i++)
		p[i] = (unsigned char)(i * 7 + seed * 13 + (i >> 10));
}

#endif /* RDMA_USER_H */
