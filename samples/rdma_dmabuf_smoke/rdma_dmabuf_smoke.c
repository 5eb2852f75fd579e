// SPDX-License-Identifier: GPL-2.0
/*
 * rdma_dmabuf_smoke: one dma-buf MR on a real RDMA device, end to end, in
 * one process. make smoke (scripts/smoke.sh) runs it as root on the machine
 * that carries the series; make check runs it on rxe in QEMU.
 *
 *   rdma_dmabuf_smoke [-d DEV] [-p PORT] [-g GIDX] [-s SIZE] [-f PID:FD] [-c CMD]
 *
 * It allocates SIZE bytes (1 MiB) from the system dma-heap
 * (/dev/dma_heap/system), registers them with ibv_reg_dmabuf_mr() on DEV
 * (the first RDMA device), connects two RC QPs of the device to each other
 * (loopback through PORT: by LID on InfiniBand, by GID GIDX on RoCE, the
 * first IPv4 one unless given), RDMA WRITEs a pattern from an ordinary MR
 * into the dma-buf MR and checks it through the buffer's CPU mapping, then
 * writes another pattern through the mapping and RDMA READs it back into an
 * ordinary MR and checks it. With -f, the dma-buf is the one process PID
 * holds as FD (a GPU's memory its runtime exported, say), taken with
 * pidfd_getfd() and never mapped, as such buffers may have no CPU mapping:
 * its first SIZE bytes (all of it if smaller) are registered, a pattern is
 * RDMA WRITten into them and RDMA READ back into an ordinary MR and
 * checked there. CMD, if given, runs (sh -c) while the MR is
 * still registered: scripts/smoke.sh shows the MR's netlink attributes
 * with it. Everything it made is destroyed before it
 * exits. Exit status: 0 when both transfers arrived intact, 1 on a failure
 * (said on stderr), 2 when something it needs is missing (no such device,
 * no system heap, no dma-buf at -f's PID:FD).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>
#include <linux/dma-buf.h>
#include <linux/dma-heap.h>
#include <linux/magic.h>

/* The address the dma-buf MR is registered at, as work requests name it. */
#define SMOKE_IOVA 0x200000ULL
/*
 * How long one work request may take before the run fails: a guard against
 * a hang, not a performance bound (under QEMU a 1 MiB transfer takes well
 * under a second).
 */
#define SMOKE_WAIT_S 300

struct smoke {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp[2];
	struct ibv_mr *dmr, *src, *dst;
	unsigned char *map, *sbuf, *dbuf;
	int fd;
	size_t size;
	const char *cmd;
	const char *foreign;	/* -f PID:FD */
	int port;
	int gidx;
	struct ibv_port_attr pattr;
	union ibv_gid gid;
};

static int fail(const char *what, int err)
{
	fprintf(stderr, "rdma_dmabuf_smoke: %s: %s\n", what, strerror(err));
	return 1;
}

static void pattern(unsigned char *p, size_t len, unsigned int seed)
{
	size_t i;

	for (i = 0; i < len; i++)
		p[i] = (unsigned char)(i * 31 + seed * 7 + (i >> 12));
}

/* The offset of the first byte of @p that is not pattern @seed, or -1. */
static long mismatch(const unsigned char *p, size_t len, unsigned int seed)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (p[i] != (unsigned char)(i * 31 + seed * 7 + (i >> 12)))
			return (long)i;
	return -1;
}

static int heap_buffer(size_t size, int *fd)
{
	struct dma_heap_allocation_data a = {
		.len = size,
		.fd_flags = O_RDWR | O_CLOEXEC,
	};
	int heap = open("/dev/dma_heap/system", O_RDONLY | O_CLOEXEC);
	int err;

	if (heap < 0)
		return errno;
	err = ioctl(heap, DMA_HEAP_IOCTL_ALLOC, &a) ? errno : 0;
	close(heap);
	*fd = a.fd;
	return err;
}

/*
 * The dma-buf another process holds: @spec is "PID:FD". Needs the right to
 * ptrace PID (root has it); the buffer stays that process's as well.
 * Returns 0 or a negative errno (-ENOTTY: not a dma-buf).
 */
static int foreign_buffer(const char *spec, size_t *size, int *fd)
{
	struct statfs fs;
	char *end;
	long pid, tfd;
	off_t len;
	int pidfd, err;

	pid = strtol(spec, &end, 10);
	if (*end != ':' || pid <= 0)
		return -EINVAL;
	tfd = strtol(end + 1, &end, 10);
	if (*end || tfd < 0)
		return -EINVAL;
	pidfd = (int)syscall(SYS_pidfd_open, (pid_t)pid, 0);
	if (pidfd < 0)
		return -errno;
	*fd = (int)syscall(SYS_pidfd_getfd, pidfd, (int)tfd, 0);
	err = *fd < 0 ? -errno : 0;
	close(pidfd);
	if (err)
		return err;
	/* A file of the dma-buf filesystem; it tells its size by lseek(). */
	if (fstatfs(*fd, &fs) || fs.f_type != DMA_BUF_MAGIC)
		return -ENOTTY;
	len = lseek(*fd, 0, SEEK_END);
	if (len <= 0)
		return -ENOTTY;
	if ((size_t)len < *size)
		*size = (size_t)len;
	return 0;
}

static int cpu_sync(int fd, __u64 flags)
{
	struct dma_buf_sync s = { .flags = flags };

	return ioctl(fd, DMA_BUF_IOCTL_SYNC, &s) ? errno : 0;
}

/* The device named @name, or the first one if @name is NULL. */
static struct ibv_context *open_device(const char *name)
{
	struct ibv_device **list;
	struct ibv_context *c = NULL;
	int i, n;

	list = ibv_get_device_list(&n);
	for (i = 0; list && i < n && !c; i++)
		if (!name || !strcmp(ibv_get_device_name(list[i]), name))
			c = ibv_open_device(list[i]);
	if (list)
		ibv_free_device_list(list);
	return c;
}

/* On RoCE, the GID to loop back through: the first IPv4-mapped one. */
static int pick_gid(struct smoke *s)
{
	static const unsigned char v4[12] = { [10] = 0xff, [11] = 0xff };
	union ibv_gid g;
	int i;

	for (i = 0; i < s->pattr.gid_tbl_len; i++) {
		if (ibv_query_gid(s->ctx, s->port, i, &g))
			continue;
		if (!memcmp(g.raw, v4, sizeof(v4))) {
			s->gidx = i;
			return 0;
		}
	}
	return -1;
}

static int connect_qp(struct smoke *s, struct ibv_qp *qp, uint32_t dest)
{
	struct ibv_qp_attr a;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = s->port;
	a.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			    IBV_ACCESS_REMOTE_READ;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			  IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
		return errno;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = s->pattr.active_mtu;
	a.dest_qp_num = dest;
	a.rq_psn = 1;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 12;
	a.ah_attr.port_num = s->port;
	if (s->pattr.link_layer == IBV_LINK_LAYER_ETHERNET) {
		a.ah_attr.is_global = 1;
		a.ah_attr.grh.dgid = s->gid;
		a.ah_attr.grh.sgid_index = s->gidx;
		a.ah_attr.grh.hop_limit = 1;
	} else {
		a.ah_attr.dlid = s->pattr.lid;
	}
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
			  IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
			  IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
		return errno;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 20;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.sq_psn = 1;
	a.max_rd_atomic = 1;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT |
			  IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			  IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC))
		return errno;
	return 0;
}

/* One signaled RDMA @op on QP 0 between @local and the dma-buf MR. */
static int transfer(struct smoke *s, enum ibv_wr_opcode op, struct ibv_mr *local)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)local->addr,
		.length = (uint32_t)s->size,
		.lkey = local->lkey,
	};
	struct ibv_send_wr wr = {
		.sg_list = &sge, .num_sge = 1, .opcode = op,
		.send_flags = IBV_SEND_SIGNALED,
	}, *bad;
	struct timespec start, now;
	struct ibv_wc wc;
	int n;

	wr.wr.rdma.remote_addr = SMOKE_IOVA;
	wr.wr.rdma.rkey = s->dmr->rkey;
	if (ibv_post_send(s->qp[0], &wr, &bad))
		return fail("ibv_post_send", errno);
	clock_gettime(CLOCK_MONOTONIC, &start);
	while (!(n = ibv_poll_cq(s->cq, 1, &wc))) {
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (now.tv_sec - start.tv_sec > SMOKE_WAIT_S)
			return fail("no completion", ETIMEDOUT);
		usleep(100);
	}
	if (n < 0)
		return fail("ibv_poll_cq", EIO);
	if (wc.status != IBV_WC_SUCCESS) {
		fprintf(stderr, "rdma_dmabuf_smoke: %s completed with %s\n",
			op == IBV_WR_RDMA_WRITE ? "RDMA WRITE" : "RDMA READ",
			ibv_wc_status_str(wc.status));
		return 1;
	}
	return 0;
}

/* -c CMD, while the MR is registered. */
static int run_cmd(struct smoke *s)
{
	int err;

	if (!s->cmd)
		return 0;
	fflush(stdout);
	err = system(s->cmd);
	if (err) {
		fprintf(stderr, "rdma_dmabuf_smoke: '%s' exited with status %d\n",
			s->cmd, err);
		return 1;
	}
	return 0;
}

static int run(struct smoke *s)
{
	const int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			   IBV_ACCESS_REMOTE_READ;
	struct ibv_qp_init_attr qa = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct stat st;
	long bad;
	int i, err;

	if (ibv_query_port(s->ctx, s->port, &s->pattr))
		return fail("ibv_query_port", errno);
	if (s->pattr.state != IBV_PORT_ACTIVE) {
		fprintf(stderr, "rdma_dmabuf_smoke: port %d of %s is not active\n",
			s->port, ibv_get_device_name(s->ctx->device));
		return 2;
	}
	if (s->pattr.link_layer == IBV_LINK_LAYER_ETHERNET) {
		if (s->gidx < 0 && pick_gid(s)) {
			fprintf(stderr, "rdma_dmabuf_smoke: no IPv4 GID on port %d (-g)\n",
				s->port);
			return 2;
		}
		if (ibv_query_gid(s->ctx, s->port, s->gidx, &s->gid))
			return fail("ibv_query_gid", errno);
	}
	if (s->foreign) {
		err = foreign_buffer(s->foreign, &s->size, &s->fd);
		if (err) {
			fprintf(stderr, "rdma_dmabuf_smoke: -f %s: %s\n", s->foreign,
				err == -ENOTTY ? "not a dma-buf" : strerror(-err));
			return 2;
		}
	} else {
		err = heap_buffer(s->size, &s->fd);
		if (err) {
			fail("allocating from /dev/dma_heap/system", err);
			return 2;
		}
		s->map = mmap(NULL, s->size, PROT_READ | PROT_WRITE, MAP_SHARED,
			      s->fd, 0);
		if (s->map == MAP_FAILED) {
			s->map = NULL;
			return fail("mmap of the dma-buf", errno);
		}
	}
	s->sbuf = calloc(1, s->size);
	s->dbuf = calloc(1, s->size);
	if (!s->sbuf || !s->dbuf)
		return fail("calloc", ENOMEM);
	s->pd = ibv_alloc_pd(s->ctx);
	if (!s->pd)
		return fail("ibv_alloc_pd", errno);
	s->cq = ibv_create_cq(s->ctx, 8, NULL, NULL, 0);
	if (!s->cq)
		return fail("ibv_create_cq", errno);
	qa.send_cq = s->cq;
	qa.recv_cq = s->cq;
	for (i = 0; i < 2; i++) {
		s->qp[i] = ibv_create_qp(s->pd, &qa);
		if (!s->qp[i])
			return fail("ibv_create_qp", errno);
	}
	for (i = 0; i < 2; i++) {
		err = connect_qp(s, s->qp[i], s->qp[1 - i]->qp_num);
		if (err)
			return fail("connecting the loopback QPs", err);
	}
	s->dmr = ibv_reg_dmabuf_mr(s->pd, 0, s->size, SMOKE_IOVA, s->fd, access);
	if (!s->dmr)
		return fail("ibv_reg_dmabuf_mr", errno);
	s->src = ibv_reg_mr(s->pd, s->sbuf, s->size, access);
	s->dst = ibv_reg_mr(s->pd, s->dbuf, s->size, access);
	if (!s->src || !s->dst)
		return fail("ibv_reg_mr", errno);
	printf("dma-buf MR: %zu bytes of %s (dma-buf fd=%d)\n", s->size,
	       s->foreign ? "another process's buffer" : "the system heap", s->fd);
	/*
	 * The buffer's inode, as debugfs bufinfo lists it: smoke.sh checks
	 * that this buffer, whatever else comes and goes, is gone after the run.
	 */
	if (!fstat(s->fd, &st))
		printf("dma-buf MR: the buffer's inode is %lu\n",
		       (unsigned long)st.st_ino);
	printf("dma-buf MR: on %s port %d, lkey 0x%x rkey 0x%x\n",
	       ibv_get_device_name(s->ctx->device), s->port, s->dmr->lkey,
	       s->dmr->rkey);

	pattern(s->sbuf, s->size, 1);
	if (transfer(s, IBV_WR_RDMA_WRITE, s->src))
		return 1;
	if (s->foreign) {
		if (transfer(s, IBV_WR_RDMA_READ, s->dst))
			return 1;
		bad = mismatch(s->dbuf, s->size, 1);
		if (bad >= 0) {
			fprintf(stderr,
				"rdma_dmabuf_smoke: byte %ld written and read back is wrong\n",
				bad);
			return 1;
		}
		printf("RDMA WRITE into the dma-buf MR and RDMA READ back: %zu bytes, checked\n",
		       s->size);
		return run_cmd(s);
	}
	err = cpu_sync(s->fd, DMA_BUF_SYNC_START | DMA_BUF_SYNC_READ);
	if (err)
		return fail("DMA_BUF_IOCTL_SYNC", err);
	bad = mismatch(s->map, s->size, 1);
	cpu_sync(s->fd, DMA_BUF_SYNC_END | DMA_BUF_SYNC_READ);
	if (bad >= 0) {
		fprintf(stderr, "rdma_dmabuf_smoke: RDMA WRITE: byte %ld of the dma-buf is wrong\n",
			bad);
		return 1;
	}
	printf("RDMA WRITE into the dma-buf MR: %zu bytes, checked through its mapping\n",
	       s->size);

	err = cpu_sync(s->fd, DMA_BUF_SYNC_START | DMA_BUF_SYNC_WRITE);
	if (err)
		return fail("DMA_BUF_IOCTL_SYNC", err);
	pattern(s->map, s->size, 2);
	cpu_sync(s->fd, DMA_BUF_SYNC_END | DMA_BUF_SYNC_WRITE);
	if (transfer(s, IBV_WR_RDMA_READ, s->dst))
		return 1;
	bad = mismatch(s->dbuf, s->size, 2);
	if (bad >= 0) {
		fprintf(stderr, "rdma_dmabuf_smoke: RDMA READ: byte %ld read back is wrong\n",
			bad);
		return 1;
	}
	printf("RDMA READ from the dma-buf MR: %zu bytes, checked\n", s->size);
	return run_cmd(s);
}

static void teardown(struct smoke *s)
{
	int i;

	if (s->dst)
		ibv_dereg_mr(s->dst);
	if (s->src)
		ibv_dereg_mr(s->src);
	if (s->dmr)
		ibv_dereg_mr(s->dmr);
	for (i = 0; i < 2; i++)
		if (s->qp[i])
			ibv_destroy_qp(s->qp[i]);
	if (s->cq)
		ibv_destroy_cq(s->cq);
	if (s->pd)
		ibv_dealloc_pd(s->pd);
	if (s->map)
		munmap(s->map, s->size);
	if (s->fd >= 0)
		close(s->fd);
	free(s->sbuf);
	free(s->dbuf);
	ibv_close_device(s->ctx);
}

int main(int argc, char **argv)
{
	struct smoke s = { .fd = -1, .size = 1 << 20, .port = 1, .gidx = -1 };
	const char *dev = NULL;
	int c, rc;

	while ((c = getopt(argc, argv, "d:p:g:s:c:f:")) != -1) {
		switch (c) {
		case 'd':
			dev = optarg;
			break;
		case 'p':
			s.port = atoi(optarg);
			break;
		case 'g':
			s.gidx = atoi(optarg);
			break;
		case 's':
			s.size = strtoull(optarg, NULL, 0);
			break;
		case 'c':
			s.cmd = optarg;
			break;
		case 'f':
			s.foreign = optarg;
			break;
		default:
			fprintf(stderr, "usage: %s [-d DEV] [-p PORT] [-g GIDX] %s\n",
				argv[0], "[-s SIZE] [-f PID:FD] [-c CMD]");
			return 2;
		}
	}
	if (s.port < 1 || s.port > 255) {
		fprintf(stderr, "rdma_dmabuf_smoke: -p: a port number, 1 to 255\n");
		return 2;
	}
	if (!s.size || s.size > UINT32_MAX) {
		fprintf(stderr, "rdma_dmabuf_smoke: -s: 1 to %u bytes\n", UINT32_MAX);
		return 2;
	}
	s.ctx = open_device(dev);
	if (!s.ctx) {
		fprintf(stderr, "rdma_dmabuf_smoke: no RDMA device%s%s\n",
			dev ? " named " : "", dev ? dev : "");
		return 2;
	}
	rc = run(&s);
	teardown(&s);
	return rc;
}
