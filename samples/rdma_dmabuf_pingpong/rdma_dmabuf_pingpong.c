// SPDX-License-Identifier: GPL-2.0
/*
 * rdma_dmabuf_pingpong: two processes exchange messages over an RC QP whose
 * memory region is a dma-buf, registered with ibv_reg_dmabuf_mr(). A small
 * example to copy: the shape of ibv_rc_pingpong, with the buffer allocated
 * as a dma-buf and verified through its CPU mapping.
 *
 *   server: rdma_dmabuf_pingpong [options]
 *   client: rdma_dmabuf_pingpong [options] SERVER
 *
 * Options:
 *   -d DEV        RDMA device (default: the first)
 *   -g GIDX       GID index (RoCE: pick the one of your IPv4 address)
 *   -p PORT       TCP port for exchanging QP numbers and keys (18515)
 *   -s SIZE       message size in bytes (4096)
 *   -n ITERS      round trips (100)
 *   --dmabuf udmabuf|exporter|devmem
 *                 where the dma-buf comes from: a memfd exported by
 *                 /dev/udmabuf (default), a movable buffer of the
 *                 umem_dmabuf_rs test exporter (/dev/dmabuf_exporter_rs),
 *                 or one of its buffers in device memory (a PCI BAR,
 *                 reached peer-to-peer like GPU VRAM)
 *
 * Each round trip: the client fills its buffer with a pattern through the
 * dma-buf's CPU mapping and SENDs it; the server checks every byte as
 * received in its dma-buf, inverts the bytes and SENDs them back; the
 * client checks those. Then the client RDMA WRITEs a last pattern straight
 * into the server's dma-buf and RDMA READs it back, and the server checks
 * it through its mapping. Exits non-zero on any error or wrong byte.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <netdb.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>
#include <linux/types.h>
#include <linux/udmabuf.h>

#include "dmabuf_exporter_rs.h"

struct peer {			/* what each side tells the other, over TCP */
	__u32 qpn;
	__u32 psn;
	__u32 rkey;
	__u32 pad;
	__u64 iova;
	union ibv_gid gid;
};

struct ctx {
	struct ibv_context *dev;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	int dmabuf_fd;
	unsigned char *buf;	/* the dma-buf's CPU mapping */
	size_t size;
};

static int die(const char *what)
{
	fprintf(stderr, "rdma_dmabuf_pingpong: %s: %s\n", what, strerror(errno));
	exit(1);
}

static size_t page_align(size_t n)
{
	size_t page = sysconf(_SC_PAGESIZE);

	return (n + page - 1) & ~(page - 1);
}

/* A dma-buf of @size bytes: a sealed memfd turned into a dma-buf by udmabuf. */
static int alloc_udmabuf(size_t size)
{
	struct udmabuf_create c = { .flags = UDMABUF_FLAGS_CLOEXEC, .size = size };
	int memfd, dev, fd;

	memfd = memfd_create("pingpong", MFD_ALLOW_SEALING);
	if (memfd < 0 || ftruncate(memfd, size) ||
	    fcntl(memfd, F_ADD_SEALS, F_SEAL_SHRINK))
		die("memfd");
	dev = open("/dev/udmabuf", O_RDWR | O_CLOEXEC);
	if (dev < 0)
		die("open /dev/udmabuf");
	c.memfd = memfd;
	fd = ioctl(dev, UDMABUF_CREATE, &c);
	if (fd < 0)
		die("UDMABUF_CREATE");
	close(dev);
	close(memfd);		/* the dma-buf keeps the pages */
	return fd;
}

/*
 * A movable dma-buf of the test exporter (it may migrate at any time), in
 * device memory with DMABUF_EXP_F_DEVMEM in @flags.
 */
static int alloc_exporter(size_t size, __u32 flags)
{
	struct dmabuf_exp_create c = {
		.version = DMABUF_EXP_VERSION,
		.flags = DMABUF_EXP_F_DYNAMIC | flags,
		.size = size,
	};
	int dev;

	dev = open("/dev/dmabuf_exporter_rs", O_RDWR | O_CLOEXEC);
	if (dev < 0)
		die("open /dev/dmabuf_exporter_rs");
	if (ioctl(dev, DMABUF_EXP_IOC_CREATE, &c))
		die("DMABUF_EXP_IOC_CREATE");
	close(dev);
	return c.fd;
}

static struct ibv_context *open_device(const char *name)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_context *ctx = NULL;
	int i;

	if (!list)
		die("ibv_get_device_list");
	for (i = 0; list[i]; i++) {
		if (!name || !strcmp(ibv_get_device_name(list[i]), name)) {
			ctx = ibv_open_device(list[i]);
			break;
		}
	}
	ibv_free_device_list(list);
	if (!ctx) {
		errno = ENODEV;
		die(name ? name : "no RDMA device");
	}
	return ctx;
}

static void setup(struct ctx *c, const char *devname, const char *kind, size_t size)
{
	struct ibv_qp_init_attr qpa = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
		     IBV_ACCESS_REMOTE_READ;

	c->size = page_align(size);
	c->dev = open_device(devname);
	c->pd = ibv_alloc_pd(c->dev);
	c->cq = ibv_create_cq(c->dev, 8, NULL, NULL, 0);
	if (!c->pd || !c->cq)
		die("ibv_alloc_pd/ibv_create_cq");
	qpa.send_cq = c->cq;
	qpa.recv_cq = c->cq;
	c->qp = ibv_create_qp(c->pd, &qpa);
	if (!c->qp)
		die("ibv_create_qp");

	if (!strcmp(kind, "udmabuf")) {
		c->dmabuf_fd = alloc_udmabuf(c->size);
	} else if (!strcmp(kind, "exporter")) {
		c->dmabuf_fd = alloc_exporter(c->size, 0);
	} else if (!strcmp(kind, "devmem")) {
		c->dmabuf_fd = alloc_exporter(c->size, DMABUF_EXP_F_DEVMEM);
	} else {
		errno = EINVAL;
		die("--dmabuf must be udmabuf, exporter or devmem");
	}
	c->buf = mmap(NULL, c->size, PROT_READ | PROT_WRITE, MAP_SHARED, c->dmabuf_fd, 0);
	if (c->buf == MAP_FAILED)
		die("mmap of the dma-buf");

	/* The whole dma-buf, at IOVA 0: offsets in the buffer are addresses. */
	c->mr = ibv_reg_dmabuf_mr(c->pd, 0, c->size, 0, c->dmabuf_fd, access);
	if (!c->mr)
		die("ibv_reg_dmabuf_mr");
	printf("%s: %zu-byte dma-buf from %s, ibv_reg_dmabuf_mr(): lkey %#x rkey %#x\n",
	       ibv_get_device_name(c->dev->device), c->size, kind, c->mr->lkey, c->mr->rkey);
}

static void connect_qp(struct ctx *c, const struct peer *me, const struct peer *other, int gidx)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT,
		.port_num = 1,
		.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ,
	};

	if (ibv_modify_qp(c->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
			  IBV_QP_ACCESS_FLAGS))
		die("QP to INIT");
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = other->qpn;
	a.rq_psn = other->psn;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 12;
	a.ah_attr.is_global = 1;
	a.ah_attr.grh.dgid = other->gid;
	a.ah_attr.grh.sgid_index = gidx;
	a.ah_attr.grh.hop_limit = 1;
	a.ah_attr.port_num = 1;
	if (ibv_modify_qp(c->qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
			  IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
			  IBV_QP_MIN_RNR_TIMER))
		die("QP to RTR");
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 18;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.sq_psn = me->psn;
	a.max_rd_atomic = 1;
	if (ibv_modify_qp(c->qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
			  IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC))
		die("QP to RTS");
}

/* Connects to SERVER or accepts one client; returns the socket. */
static int tcp_channel(const char *server, const char *port)
{
	struct addrinfo hints = { .ai_family = AF_INET, .ai_socktype = SOCK_STREAM,
				  .ai_flags = server ? 0 : AI_PASSIVE };
	struct addrinfo *res;
	int s, c, one = 1;

	if (getaddrinfo(server, port, &hints, &res))
		die("getaddrinfo");
	s = socket(res->ai_family, res->ai_socktype, 0);
	if (s < 0)
		die("socket");
	if (server) {
		int tries;

		/* The server may start seconds late: give it two minutes. */
		for (tries = 0; connect(s, res->ai_addr, res->ai_addrlen); tries++) {
			if (tries == 1200)
				die("connect");
			usleep(100000);
		}
		freeaddrinfo(res);
		return s;
	}
	setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(s, res->ai_addr, res->ai_addrlen) || listen(s, 1))
		die("bind/listen");
	freeaddrinfo(res);
	c = accept(s, NULL, NULL);
	if (c < 0)
		die("accept");
	close(s);
	return c;
}

static void xfer(int sock, void *out, void *in, size_t n)
{
	if (write(sock, out, n) != (ssize_t)n || recv(sock, in, n, MSG_WAITALL) != (ssize_t)n)
		die("exchange over TCP");
}

static void post_recv(struct ctx *c, size_t len)
{
	struct ibv_sge sge = { (uintptr_t)0, len, c->mr->lkey };
	struct ibv_recv_wr wr = { .sg_list = &sge, .num_sge = 1 }, *bad;

	/* IOVA 0 is the start of the dma-buf: addresses are MR offsets. */
	if (ibv_post_recv(c->qp, &wr, &bad))
		die("ibv_post_recv");
}

static void post_send(struct ctx *c, enum ibv_wr_opcode op, size_t len,
		      __u64 raddr, __u32 rkey)
{
	struct ibv_sge sge = { 0, len, c->mr->lkey };
	struct ibv_send_wr wr = {
		.sg_list = &sge, .num_sge = 1, .opcode = op,
		.send_flags = IBV_SEND_SIGNALED,
	}, *bad;

	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	if (ibv_post_send(c->qp, &wr, &bad))
		die("ibv_post_send");
}

/*
 * Waits for one completion. A message takes milliseconds; one that has not
 * completed after two minutes never will.
 */
static void wait_one(struct ctx *c)
{
	time_t end = time(NULL) + 120;
	struct ibv_wc wc;
	int n;

	while ((n = ibv_poll_cq(c->cq, 1, &wc)) == 0) {
		if (time(NULL) > end) {
			errno = ETIMEDOUT;
			die("waiting for a completion");
		}
	}
	if (n < 0 || wc.status != IBV_WC_SUCCESS) {
		fprintf(stderr, "rdma_dmabuf_pingpong: completion error: %s (opcode %d)\n",
			ibv_wc_status_str(wc.status), wc.opcode);
		exit(1);
	}
}

static unsigned char pattern(unsigned int iter, size_t i)
{
	return (unsigned char)(iter * 31 + i * 7 + (i >> 8));
}

static void check(const struct ctx *c, size_t len, unsigned int iter, unsigned char flip,
		  const char *what)
{
	size_t i;

	for (i = 0; i < len; i++) {
		if (c->buf[i] != (unsigned char)(pattern(iter, i) ^ flip)) {
			fprintf(stderr, "%s, iteration %u: byte %zu is %#x, expected %#x\n",
				what, iter, i, c->buf[i], pattern(iter, i) ^ flip);
			exit(1);
		}
	}
}

static void fill(struct ctx *c, size_t len, unsigned int iter, unsigned char flip)
{
	size_t i;

	for (i = 0; i < len; i++)
		c->buf[i] = pattern(iter, i) ^ flip;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "dmabuf", required_argument, NULL, 'D' },
		{ 0 },
	};
	const char *devname = NULL, *port = "18515", *kind = "udmabuf", *server = NULL;
	bool client;
	unsigned int iters = 100, it;
	size_t size = 4096;
	struct peer me = { 0 }, other;
	struct ctx c = { 0 };
	int gidx = 0, sock, opt;
	char done = 'x';

	while ((opt = getopt_long(argc, argv, "d:g:p:s:n:", longopts, NULL)) != -1) {
		switch (opt) {
		case 'd':
			devname = optarg;
			break;
		case 'g':
			gidx = atoi(optarg);
			break;
		case 'p':
			port = optarg;
			break;
		case 's':
			size = strtoul(optarg, NULL, 0);
			break;
		case 'n':
			iters = strtoul(optarg, NULL, 0);
			break;
		case 'D':
			kind = optarg;
			break;
		default:
			fprintf(stderr, "usage: %s [-d DEV] [-g GIDX] [-p PORT] [-s SIZE]\n"
				"  [-n ITERS] [--dmabuf udmabuf|exporter|devmem] [SERVER]\n",
				argv[0]);
			return 2;
		}
	}
	if (optind < argc)
		server = argv[optind];
	client = server;
	if (!size) {
		errno = EINVAL;
		die("-s must be at least 1");
	}

	setup(&c, devname, kind, size);
	me.qpn = c.qp->qp_num;
	me.psn = (getpid() * 2654435761u) & 0xffffff;
	me.rkey = c.mr->rkey;
	me.iova = 0;
	if (ibv_query_gid(c.dev, 1, gidx, &me.gid))
		die("ibv_query_gid");
	sock = tcp_channel(server, port);
	xfer(sock, &me, &other, sizeof(me));
	connect_qp(&c, &me, &other, gidx);
	/* Both sides ready to receive before anybody sends. */
	post_recv(&c, size);
	xfer(sock, &done, &done, 1);

	for (it = 0; it < iters; it++) {
		if (client) {
			fill(&c, size, it, 0);
			post_send(&c, IBV_WR_SEND, size, 0, 0);
			wait_one(&c);			/* send */
			wait_one(&c);			/* the reply arrived */
			check(&c, size, it, 0xff, "reply");
		} else {
			wait_one(&c);			/* the message arrived */
			check(&c, size, it, 0, "message");
			fill(&c, size, it, 0xff);
		}
		post_recv(&c, size);
		if (!client) {
			post_send(&c, IBV_WR_SEND, size, 0, 0);
			wait_one(&c);
		}
	}
	printf("%u round trips of %zu bytes through dma-buf MRs, every byte checked\n",
	       iters, size);

	/* One-sided: the client writes into the server's dma-buf, reads it back. */
	if (client) {
		fill(&c, size, iters, 0x5a);
		post_send(&c, IBV_WR_RDMA_WRITE, size, other.iova, other.rkey);
		wait_one(&c);
		memset(c.buf, 0, size);
		post_send(&c, IBV_WR_RDMA_READ, size, other.iova, other.rkey);
		wait_one(&c);
		check(&c, size, iters, 0x5a, "RDMA READ of the peer's dma-buf");
		xfer(sock, &done, &done, 1);
		printf("RDMA WRITE into the server's dma-buf, READ back: %zu bytes match\n", size);
	} else {
		xfer(sock, &done, &done, 1);	/* the client is done writing */
		check(&c, size, iters, 0x5a, "RDMA WRITE seen in the dma-buf's mapping");
		printf("the client's RDMA WRITE is in this dma-buf (seen through its mapping)\n");
	}

	close(sock);
	if (ibv_dereg_mr(c.mr) || ibv_destroy_qp(c.qp) || ibv_destroy_cq(c.cq) ||
	    ibv_dealloc_pd(c.pd))
		die("teardown");
	munmap(c.buf, c.size);
	close(c.dmabuf_fd);
	ibv_close_device(c.dev);
	return 0;
}
