// SPDX-License-Identifier: GPL-2.0
/*
 * End-to-end test of dma-buf MRs on soft-RoCE, run in the guest; prints KTAP.
 *
 * Two RC QPs of one rxe device, connected to each other. dma-buf MRs are
 * registered with the uverbs ioctl UVERBS_METHOD_REG_DMABUF_MR (what
 * ibv_reg_dmabuf_mr() sends; rdma-core's rxe provider does not implement
 * it), on buffers of dmabuf_exporter_rs (movable, in system memory or in
 * the device memory of its PCI BAR), of udmabuf (memfd), of the system
 * dma-heap and of vgem (a DRM driver's GEM objects, with its fences). Every
 * byte is checked through the exporter's CPU mapping (mmap(), and
 * DMABUF_EXP_IOC_RW for device memory).
 *
 * Usage: rxe_dmabuf_test DEVICE GID_INDEX [rust]
 *                        [stress|remove|remove-netdev NETDEV|bounce]
 *        rxe_dmabuf_test DEVICE GID_INDEX witness TAG CMD [TAG CMD...]
 *   rust: the Rust importer is loaded; also check that rmmod is refused
 *   while one of its MRs lives.
 *   stress: also migrate from a second thread while writes stream.
 *   remove: instead, remove the device ("rdma link delete") while dma-buf
 *   MRs live and check that removal released them (the device is gone
 *   afterwards). remove-netdev: the same, removing the device by deleting
 *   its network device NETDEV ("ip link del").
 *   bounce: instead, check that registration is refused with EOPNOTSUPP
 *   (booted with swiotlb=force, where bus addresses are bounce copies).
 *   witness: instead, leave data in device memory for the host to check
 *   (see witness_mode()).
 *
 * Each case starts from a known state: after any failed work request (an
 * error completion, or no progress for $RDMA_TEST_STALL seconds, see
 * rdma_user.h) the QPs and their CQ are destroyed and made again, so a
 * failing case fails alone instead of leaving later ones a QP in the error
 * state. Environment:
 *   RXE_TEST_CASES=NAME[,NAME...]  run only these cases (see wanted()).
 *   RXE_TEST_FORCE_STALL=NAME      the write/read case NAME first migrates
 *                                  its buffer with a 10 s copy fence, so
 *                                  that its WRITE stalls (the runner's check
 *                                  that a stalled case fails alone).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <infiniband/verbs.h>

#include "bufinfo_user.h"
#include "exporters_user.h"
#include "ktap_user.h"
#include "rdma_user.h"

#define PAGE 4096UL
#define READ_CHUNK (4UL << 20)

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static struct ibv_cq *cq;
static struct ibv_qp *qa, *qb;
static int expdev;
static union ibv_gid gid;
static int gidx;
static struct rdma_progress progress;
/* Why the last work request failed, for the case's result line. */
static char why[96];

static int reg_dmabuf_mr(__u64 offset, __u64 length, __u64 iova, int fd,
			 __u32 access, struct dmr *mr)
{
	return uv_reg_dmabuf_mr(ctx->cmd_fd, pd->handle, offset, length, iova, fd,
				access, mr);
}

static int dereg_mr(struct dmr *mr)
{
	return uv_dereg_mr(ctx->cmd_fd, mr);
}

static int exp_create(__u64 size, int *err)
{
	return exp_create_chunks(expdev, size, DMABUF_EXP_F_DYNAMIC, NULL, 0, err);
}

static int exp_migrate(int fd, __u32 delay)
{
	return exp_migrate_fd(expdev, fd, delay, 0);
}

static struct dmabuf_exp_stats exp_stats(int fd)
{
	return exp_stats_fd(expdev, fd);
}

static double now(void)
{
	return now_s();
}

/* Is case @name to run ($RXE_TEST_CASES, default all)? */
static int wanted(const char *name)
{
	const char *list = getenv("RXE_TEST_CASES"), *p;
	size_t n = strlen(name);

	if (!list || !*list)
		return 1;
	for (p = list; (p = strstr(p, name)); p += n)
		if ((p == list || p[-1] == ',') && (p[n] == ',' || !p[n]))
			return 1;
	return 0;
}

/*
 * The loopback pair: a CQ and two RC QPs connected to each other; 0 or -1.
 * What was there before is destroyed first.
 */
static int qps_open(void)
{
	struct ibv_qp_init_attr qia = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 1,
			 .max_recv_sge = 1 },
	};

	verbs_close(qa, qb, cq, NULL, NULL);
	qa = NULL;
	qb = NULL;
	cq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	if (!cq)
		return -1;
	qia.send_cq = cq;
	qia.recv_cq = cq;
	qa = ibv_create_qp(pd, &qia);
	qb = ibv_create_qp(pd, &qia);
	return qa && qb && !connect_qp(qa, qb->qp_num, &gid, gidx) &&
	       !connect_qp(qb, qa->qp_num, &gid, gidx) ? 0 : -1;
}

/*
 * After a failed work request: the QPs are in the error state, or a
 * transfer may still be in flight. Destroying them ends both (and waits for
 * a responder that is busy); later cases get a new pair.
 */
static void qps_recover(void)
{
	fprintf(stderr, "# after \"%s\" (%s): new QP pair\n", ktap_doing, why);
	if (qps_open())
		fprintf(stderr, "# the new QP pair failed: %s\n", strerror(errno));
}

static enum ibv_wc_status last_status;

/*
 * Waits for @n completions; returns how many succeeded. Fails when the
 * device makes no progress for the stall interval (rdma_user.h), not
 * after a total time, and prints the state of the QPs (iproute2's "rdma
 * res show qp") then. Either failure sets why[] and starts a new QP pair.
 */
static int poll_cq(int n)
{
	struct ibv_wc wc;
	int ok = 0, got, failed = 0;
	double stalled;

	why[0] = 0;
	rdma_progress_restart(&progress);
	while (n > 0) {
		got = ibv_poll_cq(cq, 1, &wc);
		if (got < 0) {
			snprintf(why, sizeof(why), "ibv_poll_cq failed");
			failed = 1;
			break;
		}
		if (!got) {
			stalled = rdma_progress_stalled(&progress);
			if (!stalled)
				continue;
			snprintf(why, sizeof(why), "no progress for %.0f s", stalled);
			fprintf(stderr, "# %s, %d completion(s) missing; QPs:\n", why, n);
			if (system("rdma res show qp 1>&2"))
				fprintf(stderr, "rdma res show qp failed\n");
			failed = 1;
			break;
		}
		rdma_progress_restart(&progress);
		n--;
		last_status = wc.status;
		if (wc.status == IBV_WC_SUCCESS) {
			ok++;
			continue;
		}
		snprintf(why, sizeof(why), "completion: %s", ibv_wc_status_str(wc.status));
		fprintf(stderr, "# %s\n", why);
		failed = 1;
	}
	if (failed)
		qps_recover();
	return ok;
}

/* Posts one work request on qa (or qb) and waits for it; 1 if it succeeded. */
static int rdma(struct ibv_qp *qp, enum ibv_wr_opcode op, __u64 laddr, __u32 lkey,
		__u32 len, __u64 raddr, __u32 rkey)
{
	if (post_rdma(qp, op, laddr, lkey, len, raddr, rkey)) {
		snprintf(why, sizeof(why), "ibv_post_send failed");
		return 0;
	}
	return poll_cq(1) == 1;
}

/* ", WHY" after a failed work request, for a result line; "" otherwise. */
static const char *why_failed(void)
{
	static char s[sizeof(why) + 2];

	snprintf(s, sizeof(s), "%s%s", why[0] ? ", " : "", why);
	return s;
}

static int same(const unsigned char *p, size_t len, unsigned int seed)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (p[i] != (unsigned char)(i * 7 + seed * 13 + (i >> 10)))
			return 0;
	return 1;
}

struct migrator {
	int fd, rounds, failed;
	/* Alternate between system and device memory. */
	int devmem;
};

/* Migrates the buffer again and again while the main thread writes. */
static void *migrate_loop(void *arg)
{
	struct migrator *m = arg;
	__u32 flags;
	int i;

	for (i = 0; i < m->rounds; i++) {
		flags = !m->devmem ? 0 : i % 2 ? DMABUF_EXP_MIGRATE_F_TO_SYSTEM :
			DMABUF_EXP_MIGRATE_F_TO_DEVMEM;
		if (exp_migrate_fd(expdev, m->fd, i % 2 ? 5 : 0, flags))
			m->failed++;
		usleep(2000);
	}
	return NULL;
}

/* WRITE into and READ back from an exporter dma-buf MR of @size bytes. */
static void write_read_case(const char *name, size_t size, size_t offset, unsigned char *host,
			    struct ibv_mr *hmr)
{
	int err, fd = exp_create(size + 2 * PAGE, &err);
	__u64 iova = 0x7f0000000000ULL + (offset & (PAGE - 1));
	unsigned char *map;
	size_t done, chunk;
	const char *stall;
	struct dmr mr;
	double t;
	int ok;

	if (fd < 0) {
		result(0, "%s: create (%d)", name, err);
		return;
	}
	map = mmap(NULL, size + 2 * PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	err = reg_dmabuf_mr(offset, size, iova, fd, IBV_ACCESS_LOCAL_WRITE |
			    IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ, &mr);
	result(!err && map != MAP_FAILED, "%s: reg_dmabuf_mr (errno %d)", name, err);
	if (err || map == MAP_FAILED)
		goto out;
	stall = getenv("RXE_TEST_FORCE_STALL");
	if (stall && !strcmp(stall, name) && exp_migrate(fd, 10000))
		result(0, "%s: migration with a 10 s fence", name);
	fill(host, size, 3);
	t = now();
	ok = rdma(qa, IBV_WR_RDMA_WRITE, (uintptr_t)host, hmr->lkey, size, iova, mr.rkey);
	result(ok && same(map + offset, size, 3), "%s: rdma_write_into_dmabuf_mr (%.1f s%s)",
	       name, now() - t, why_failed());
	memset(host, 0, size);
	fill(map + offset, size, 4);
	/*
	 * READs of at most 4 MiB, each answered well within the QP's retransmit
	 * timeout: a READ the requester retransmits leaves a duplicate request
	 * at the responder, which rxe executes again even after the READ has
	 * completed - and once this MR is deregistered, that fails the rkey
	 * check and moves the responder QP to the error state, breaking the
	 * tests after this one (see Documentation/rxe.rst).
	 */
	ok = 1;
	for (done = 0; ok && done < size; done += chunk) {
		chunk = size - done < READ_CHUNK ? size - done : READ_CHUNK;
		ok = rdma(qa, IBV_WR_RDMA_READ, (uintptr_t)host + done, hmr->lkey, chunk,
			  iova + done, mr.rkey);
	}
	result(ok && same(host, size, 4), "%s: rdma_read_from_dmabuf_mr%s", name, why_failed());
	result(dereg_mr(&mr) == 0, "%s: dereg", name);
out:
	if (map != MAP_FAILED)
		munmap(map, size + 2 * PAGE);
	close(fd);
}

/*
 * Three live MRs on one exporter buffer of 16 pages, as applications do when
 * they register one GPU buffer several times: A and B over the whole buffer,
 * C over [4 pages + 100, 12 pages) (overlapping both, sub-page offset). Each
 * is an attachment of its own that maps the same pages. Writes through each,
 * reads back through another, and the buffer migrates between writes.
 */
/*
 * Three MRs on one exporter buffer at once (two over all of it, one over an
 * overlapping window at a sub-page offset), dynamic or, with @pinned, pinned
 * (rxe's dmabuf_pinned=1, read at registration).
 */
static void several_mrs_case(unsigned char *host, struct ibv_mr *hmr, int pinned)
{
	const char *tag = pinned ? "several_pinned_mrs" : "several_mrs";
	const char *param = "/sys/module/rdma_rxe/parameters/dmabuf_pinned";
	const __u32 acc = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			  IBV_ACCESS_REMOTE_READ;
	const __u64 ia = 0x300000, ib = 0x400000, ic = 0x500000 + 100;
	int err, fd = exp_create(16 * PAGE, &err), ok, i;
	struct dmabuf_exp_stats st;
	struct dmr a, b, c;
	unsigned char *map;
	char cmd[128];

	if (fd < 0) {
		result(0, "%s: create (%d)", tag, err);
		return;
	}
	snprintf(cmd, sizeof(cmd), "echo %d > %s", pinned, param);
	map = mmap(NULL, 16 * PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	ok = map != MAP_FAILED && !system(cmd);
	ok = ok && !reg_dmabuf_mr(0, 16 * PAGE, ia, fd, acc, &a);
	ok = ok && !reg_dmabuf_mr(0, 16 * PAGE, ib, fd, acc, &b);
	ok = ok && !reg_dmabuf_mr(4 * PAGE + 100, 8 * PAGE - 100, ic, fd, acc, &c);
	snprintf(cmd, sizeof(cmd), "echo 0 > %s", param);
	ok = !system(cmd) && ok;
	st = exp_stats(fd);
	result(ok && st.attachments == 3 && st.pins == (pinned ? 3U : 0U),
	       "%s_on_one_buffer_registered (attachments %llu, pins %llu)", tag,
	       (unsigned long long)st.attachments, (unsigned long long)st.pins);
	if (!ok)
		goto out;
	/* Through C into the overlap, read back through A; through B, read in C. */
	fill(host, 2 * PAGE, 40);
	ok = rdma(qa, IBV_WR_RDMA_WRITE, (uintptr_t)host, hmr->lkey, 2 * PAGE, ic + PAGE, c.rkey);
	ok = ok && same(map + 5 * PAGE + 100, 2 * PAGE, 40);
	memset(host, 0, 2 * PAGE);
	ok = ok && rdma(qa, IBV_WR_RDMA_READ, (uintptr_t)host, hmr->lkey, 2 * PAGE,
			ia + 5 * PAGE + 100, a.rkey);
	ok = ok && same(host, 2 * PAGE, 40);
	fill(host, PAGE, 41);
	ok = ok && rdma(qa, IBV_WR_RDMA_WRITE, (uintptr_t)host, hmr->lkey, PAGE,
			ib + 8 * PAGE, b.rkey);
	memset(host, 0, PAGE);
	ok = ok && rdma(qa, IBV_WR_RDMA_READ, (uintptr_t)host, hmr->lkey, PAGE,
			ic + 4 * PAGE - 100, c.rkey);
	result(ok && same(host, PAGE, 41), "%s_write_one_read_another", tag);
	/*
	 * Dynamic: each migration notifies all three, each MR re-maps on its
	 * next use. Pinned: the exporter refuses to move, the data stays.
	 */
	for (i = 0; ok && i < 6; i++) {
		const struct dmr *m = i % 3 == 0 ? &a : i % 3 == 1 ? &b : &c;
		__u64 base = i % 3 == 0 ? ia : i % 3 == 1 ? ib : ic;

		ok = exp_migrate(fd, i % 2 ? 5 : 0) == (pinned ? EBUSY : 0);
		fill(host, PAGE, 50 + i);
		ok = ok && rdma(qa, IBV_WR_RDMA_WRITE, (uintptr_t)host, hmr->lkey, PAGE,
				base + PAGE, m->rkey);
		ok = ok && same(map + (i % 3 == 2 ? 5 * PAGE + 100 : PAGE), PAGE, 50 + i);
	}
	st = exp_stats(fd);
	if (pinned)
		result(ok && st.migrations == 0 && st.move_notifies == 0,
		       "%s_refuse_migrations (migrations %llu, notified %llu)", tag,
		       (unsigned long long)st.migrations, (unsigned long long)st.move_notifies);
	else
		result(ok && st.move_notifies >= 18, "%s_follow_migrations (notified %llu)", tag,
		       (unsigned long long)st.move_notifies);
	result(!dereg_mr(&a) && !dereg_mr(&b) && !dereg_mr(&c), "%s_dereg", tag);
	st = exp_stats(fd);
	result(st.attachments == 0 && st.mappings == 0 && st.pins == 0 && !exp_migrate(fd, 0),
	       "%s_attachments_back_to_0", tag);
out:
	if (map != MAP_FAILED)
		munmap(map, 16 * PAGE);
	close(fd);
}

/* Runs CMD...; its exit status, or -1 if it is still running after @secs. */
static int run_for(int secs, double *took, char *const argv[])
{
	double end = now() + secs, start = now();
	int status;
	pid_t pid = fork();

	if (pid < 0)
		return -1;
	if (!pid) {
		execvp(argv[0], argv);
		_exit(127);
	}
	while (now() < end) {
		if (waitpid(pid, &status, WNOHANG) == pid) {
			*took = now() - start;
			return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
		}
		usleep(50000);
	}
	return -1;
}

/*
 * Device removal with dma-buf MRs alive: the core destroys them (rxe can
 * disassociate), which must detach from both exporters while the process
 * still holds every file descriptor, and the process sees a fatal event and
 * EIO from then on.
 */
static void removal_test(char *const cmd[], unsigned char *host, struct ibv_mr *hmr)
{
	int fd, ufd, err, ok, attached, rc, n, fatal;
	struct ibv_async_event ev;
	struct dmabuf_exp_stats st;
	struct pollfd pfd;
	unsigned char *map, *umap;
	struct dmr mr, mr2;
	__u64 notifies;
	double took = 0;

	fd = exp_create(16 * PAGE, &err);
	map = mmap(NULL, 16 * PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	ufd = udmabuf_create(16 * PAGE, &umap);
	ok = fd >= 0 && ufd >= 0 && map != MAP_FAILED &&
	     !reg_dmabuf_mr(0, 16 * PAGE, 0x100000, fd, IBV_ACCESS_LOCAL_WRITE |
			    IBV_ACCESS_REMOTE_WRITE, &mr) &&
	     !reg_dmabuf_mr(0, 16 * PAGE, 0x200000, ufd, IBV_ACCESS_LOCAL_WRITE |
			    IBV_ACCESS_REMOTE_WRITE, &mr2);
	result(ok, "reg_exporter_and_udmabuf_mrs");
	if (!ok)
		return;
	fill(host, 16 * PAGE, 7);
	ok = rdma(qa, IBV_WR_RDMA_WRITE, (uintptr_t)host, hmr->lkey, 16 * PAGE, 0x100000,
		  mr.rkey) &&
	     rdma(qa, IBV_WR_RDMA_WRITE, (uintptr_t)host, hmr->lkey, 16 * PAGE, 0x200000,
		  mr2.rkey);
	result(ok && same(map, 16 * PAGE, 7) && same(umap, 16 * PAGE, 7),
	       "writes_into_live_mrs");
	st = exp_stats(fd);
	dmabufs_of("udmabuf", &attached);
	result(st.attachments == 1 && st.mappings == 1 && attached == 1,
	       "both_buffers_attached_before_removal");
	notifies = st.move_notifies;

	rc = run_for(600, &took, cmd);
	result(rc == 0, "%s_returns_with_mrs_alive (exit %d, %.1f s)",
	       strcmp(cmd[0], "ip") ? "rdma_link_delete" : "netdev_delete", rc, took);
	if (rc)
		return;	/* a removal still waiting blocks everything after it */

	/* Port and GID events may come first (a netdev going away). */
	pfd.fd = ctx->async_fd;
	pfd.events = POLLIN;
	for (n = 0, fatal = 0; !fatal && n < 10; n++) {
		if (poll(&pfd, 1, 60000) != 1 || ibv_get_async_event(ctx, &ev))
			break;
		fatal = ev.event_type == IBV_EVENT_DEVICE_FATAL;
		ibv_ack_async_event(&ev);
	}
	result(fatal, "async_event_device_fatal (after %d other events)", fatal ? n - 1 : n);

	st = exp_stats(fd);
	result(st.attachments == 0 && st.mappings == 0,
	       "removal_detached_exporter_buffer (attachments %llu, mappings %llu)",
	       (unsigned long long)st.attachments, (unsigned long long)st.mappings);
	n = dmabufs_of("udmabuf", &attached);
	result(n == 1 && attached == 0, "removal_detached_udmabuf (%d attached)", attached);
	result(exp_migrate(fd, 0) == 0 && exp_stats(fd).move_notifies == notifies &&
	       same(map, 16 * PAGE, 7), "migration_after_removal_notifies_nobody_keeps_data");
	/*
	 * The core destroyed the MR; destroying its handle still succeeds,
	 * anything that needs the device fails with EIO.
	 */
	err = dereg_mr(&mr);
	result(!err, "dereg_after_removal_frees_the_handle (%s)", strerror(err));
	err = reg_dmabuf_mr(0, PAGE, 0, fd, IBV_ACCESS_LOCAL_WRITE, &mr);
	result(err == EIO, "registration_after_removal_eio (%s)", strerror(err));
	result(exp_stats(fd).attachments == 0, "failed_registration_attached_nothing");

	munmap(map, 16 * PAGE);
	munmap(umap, 16 * PAGE);
	close(fd);
	close(ufd);
}

/*
 * With forced bounce buffering the bus addresses of a mapping are those of
 * a copy; rxe must refuse dma-buf MRs rather than write into the copy.
 */
static void bounce_test(void)
{
	int fd, ufd, err, attached, n;
	unsigned char *umap;
	struct ibv_mr *mr;
	struct dmr dmr;
	void *buf;

	fd = exp_create(4 * PAGE, &err);
	ufd = udmabuf_create(4 * PAGE, &umap);
	result(fd >= 0 && ufd >= 0, "buffers_created");
	err = reg_dmabuf_mr(0, 4 * PAGE, 0, fd, IBV_ACCESS_LOCAL_WRITE, &dmr);
	result(err == EOPNOTSUPP, "exporter_buffer_refused (%s)", strerror(err));
	err = reg_dmabuf_mr(0, 4 * PAGE, 0, ufd, IBV_ACCESS_LOCAL_WRITE, &dmr);
	result(err == EOPNOTSUPP, "udmabuf_refused (%s)", strerror(err));
	n = dmabufs_of("udmabuf", &attached);
	result(exp_stats(fd).attachments == 0 && n == 1 && !attached,
	       "refusal_leaves_no_attachment");
	/* Ordinary MRs are not affected. */
	buf = aligned_alloc(PAGE, 4 * PAGE);
	mr = buf ? ibv_reg_mr(pd, buf, 4 * PAGE, IBV_ACCESS_LOCAL_WRITE) : NULL;
	result(!!mr, "user_memory_mr_still_registers");
	if (mr)
		ibv_dereg_mr(mr);
	free(buf);
	munmap(umap, 4 * PAGE);
	close(fd);
	close(ufd);
}

/*
 * SEND/RECV with dma-buf MRs on both sides, a dma-buf MR as the local
 * buffer of a WRITE, and writes while the exporter migrates the buffer
 * (with @stress, also from a second thread). With @rust, rmmod of the Rust
 * importer must be refused while its MRs live.
 */
static void send_recv_migrations(unsigned char *host, struct ibv_mr *hmr, int stress, int rust)
{
	int err, ok, i, ufd, fd = exp_create(16 * PAGE, &err);
	unsigned char *map, *umap;
	struct dmabuf_exp_stats st;
	struct dmr mr, mr2;

	map = mmap(NULL, 16 * PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	ufd = udmabuf_create(16 * PAGE, &umap);
	ok = fd >= 0 && ufd >= 0 && map != MAP_FAILED &&
	     !reg_dmabuf_mr(0, 16 * PAGE, 0x100000, fd, IBV_ACCESS_LOCAL_WRITE |
			    IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ, &mr) &&
	     !reg_dmabuf_mr(0, 16 * PAGE, 0x200000, ufd, IBV_ACCESS_LOCAL_WRITE |
			    IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ, &mr2);
	result(ok, "reg_exporter_and_udmabuf_mrs");
	if (ok) {
		struct ibv_sge rsge = { .addr = 0x200000, .length = 8 * PAGE, .lkey = mr2.lkey };
		struct ibv_recv_wr rwr = { .sg_list = &rsge, .num_sge = 1 }, *rbad;

		fill(map, 8 * PAGE, 5);
		ok = !ibv_post_recv(qb, &rwr, &rbad);
		ok = ok && rdma(qa, IBV_WR_SEND, 0x100000, mr.lkey, 8 * PAGE, 0, 0);
		ok = ok && poll_cq(1) == 1;
		result(ok && same(umap, 8 * PAGE, 5), "send_recv_exporter_to_udmabuf%s",
		       why_failed());
		fill(umap + 8 * PAGE, 4 * PAGE, 6);
		ok = rdma(qa, IBV_WR_RDMA_WRITE, 0x200000 + 8 * PAGE, mr2.lkey, 4 * PAGE,
			  0x100000 + 8 * PAGE, mr.rkey);
		result(ok && same(map + 8 * PAGE, 4 * PAGE, 6), "write_udmabuf_mr_to_exporter_mr%s",
		       why_failed());

		/* Writes continue while the exporter migrates the buffer. */
		ok = 1;
		for (i = 0; i < 20; i++) {
			fill(host, 4 * PAGE, 100 + i);
			ok &= rdma(qa, IBV_WR_RDMA_WRITE, (uintptr_t)host, hmr->lkey, 4 * PAGE,
				   0x100000 + (i % 4) * 4 * PAGE, mr.rkey);
			ok &= exp_migrate(fd, i % 3 ? 0 : 20) == 0;
			ok &= same(map + (i % 4) * 4 * PAGE, 4 * PAGE, 100 + i);
		}
		st = exp_stats(fd);
		result(ok, "writes_during_20_migrations_no_corruption%s", why_failed());
		result(st.migrations == 20 && st.move_notifies >= 20 && st.maps >= 20,
		       "move_notify_and_remap_happened (migrations %llu, notified %llu, maps %llu)",
		       (unsigned long long)st.migrations, (unsigned long long)st.move_notifies,
		       (unsigned long long)st.maps);
		/* With migrations in a second thread while writes stream. */
		if (stress) {
			struct migrator m = { .fd = fd, .rounds = 30 };
			unsigned char last[4] = { 0 };
			pthread_t thread;
			int region, ok_all = 1;

			ok = !pthread_create(&thread, NULL, migrate_loop, &m);
			for (i = 0; ok && i < 60; i++) {
				region = i % 4;
				fill(host + region * 4 * PAGE, 4 * PAGE, 200 + i);
				ok_all &= rdma(qa, IBV_WR_RDMA_WRITE,
					       (uintptr_t)host + region * 4 * PAGE, hmr->lkey,
					       4 * PAGE, 0x100000 + region * 4 * PAGE, mr.rkey);
				last[region] = 200 + i;
			}
			if (ok)
				pthread_join(thread, NULL);
			for (region = 0; region < 4; region++)
				ok_all &= same(map + region * 4 * PAGE, 4 * PAGE, last[region]);
			st = exp_stats(fd);
			result(ok && ok_all && !m.failed,
			       "writes_during_concurrent_migrations_no_corruption (%llu migrations%s)",
			       (unsigned long long)st.migrations, why_failed());
		}
		if (rust)
			result(system("rmmod umem_dmabuf_rs 2>/dev/null") != 0,
			       "rmmod_refused_while_rust_mr_lives");
		result(!dereg_mr(&mr) && !dereg_mr(&mr2), "dereg_exporter_and_udmabuf_mrs");
		st = exp_stats(fd);
		result(st.attachments == 0 && st.mappings == 0, "exporter_attachments_back_to_0");
	}
	if (map != MAP_FAILED)
		munmap(map, 16 * PAGE);
	if (umap != MAP_FAILED)
		munmap(umap, 16 * PAGE);
	close(fd);
	close(ufd);
}

/*
 * UCX and libfabric decide that a device supports dma-buf MRs by calling
 * libibverbs' ibv_reg_dmabuf_mr() with fd -1: EBADF means the whole path
 * (provider, uverbs, driver, importer) exists and reached dma_buf_get();
 * any other errno (EOPNOTSUPP above all) turns dma-buf support off.
 */
static void capability_probe_case(void)
{
	struct ibv_mr *m;
	int e;

	errno = 0;
	m = ibv_reg_dmabuf_mr(pd, 0, PAGE, 0, -1, IBV_ACCESS_LOCAL_WRITE);
	e = errno;
	result(!m && e == EBADF, "capability_probe_fd_minus_1_ebadf (errno %d)", e);
	if (m)
		ibv_dereg_mr(m);
}

/* Bad requests get the uverbs/C errno. */
static void errno_cases(void)
{
	int err, fd = exp_create(4 * PAGE, &err);
	struct dmr mr;

	result(reg_dmabuf_mr(100, PAGE, 0x1000 + 200, fd, IBV_ACCESS_LOCAL_WRITE, &mr) == EINVAL,
	       "errno_offset_iova_page_offset_mismatch");
	result(reg_dmabuf_mr(0, 5 * PAGE, 0, fd, IBV_ACCESS_LOCAL_WRITE, &mr) == EINVAL,
	       "errno_length_beyond_buffer");
	result(reg_dmabuf_mr(0, PAGE, 0, 9999, IBV_ACCESS_LOCAL_WRITE, &mr) == EBADF,
	       "errno_bad_fd");
	result(reg_dmabuf_mr(0, PAGE, 0, expdev, IBV_ACCESS_LOCAL_WRITE, &mr) == EINVAL,
	       "errno_not_a_dmabuf_fd");
	result(reg_dmabuf_mr(0, PAGE, 0, fd, IBV_ACCESS_REMOTE_WRITE, &mr) == EINVAL,
	       "errno_remote_write_without_local_write");
	result(reg_dmabuf_mr(0, PAGE, 0, fd, IBV_ACCESS_LOCAL_WRITE | (1U << 30), &mr) == EINVAL,
	       "errno_unknown_access_flag");
	close(fd);
	capability_probe_case();
}

/* A pinned MR (rdma_rxe dmabuf_pinned=1) makes migration fail. */
static void pinned_case(void)
{
	struct dmabuf_exp_stats st;
	struct dmr mr;
	int err, fd;

	if (system("echo 1 > /sys/module/rdma_rxe/parameters/dmabuf_pinned")) {
		result(0, "rdma_rxe dmabuf_pinned parameter writable");
		return;
	}
	fd = exp_create(4 * PAGE, &err);
	err = reg_dmabuf_mr(0, 4 * PAGE, 0, fd, IBV_ACCESS_LOCAL_WRITE, &mr);
	result(!err && exp_migrate(fd, 0) == EBUSY, "pinned_mr_migration_ebusy");
	st = exp_stats(fd);
	result(st.pins == 1, "pinned_mr_holds_one_pin");
	if (!err)
		dereg_mr(&mr);
	st = exp_stats(fd);
	result(st.pins == 0 && exp_migrate(fd, 0) == 0, "unpinned_after_dereg");
	close(fd);
	result(!system("echo 0 > /sys/module/rdma_rxe/parameters/dmabuf_pinned"),
	       "dynamic_mode_restored");
}

/* An access that cannot re-map fails like one with a bad key. */
static void cannot_remap_case(unsigned char *host, struct ibv_mr *hmr)
{
	struct dmr mr;
	int err, ok, fd = exp_create(4 * PAGE, &err);

	err = reg_dmabuf_mr(0, 4 * PAGE, 0x300000, fd, IBV_ACCESS_LOCAL_WRITE |
			    IBV_ACCESS_REMOTE_WRITE, &mr);
	ok = !err && rdma(qa, IBV_WR_RDMA_WRITE, (uintptr_t)host, hmr->lkey, PAGE, 0x300000,
			  mr.rkey);
	if (ok) {
		struct dmabuf_exp_migrate fm = {
			.version = DMABUF_EXP_VERSION, .fd = fd,
			.flags = DMABUF_EXP_MIGRATE_F_FAIL_MAPS,
		};

		ok = !ioctl(expdev, DMABUF_EXP_IOC_MIGRATE, &fm) &&
		     !rdma(qa, IBV_WR_RDMA_WRITE, (uintptr_t)host, hmr->lkey, PAGE, 0x300000,
			   mr.rkey) &&
		     last_status == IBV_WC_REM_ACCESS_ERR;
	}
	result(ok, "access_that_cannot_remap_fails_like_a_bad_key (status %s)",
	       ibv_wc_status_str(last_status));
	if (!err)
		dereg_mr(&mr);
	close(fd);
}

/*
 * Device memory (DMABUF_EXP_F_DEVMEM): buffers in the exporter's PCI BAR,
 * which rxe reaches peer-to-peer (it attaches for the PCI function under its
 * network device, behind the same PCIe switch). Every byte is checked through
 * the exporter (DMABUF_EXP_IOC_RW), and WRITEs also through the dma-buf's CPU
 * mapping (the BAR's own pages); the witness mode below leaves data for the
 * host to check as well.
 */
#define DEVMEM_PAGES 64
#define PINNED_PARAM "/sys/module/rdma_rxe/parameters/dmabuf_pinned"
#define ACCESS_ALL (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | \
		    IBV_ACCESS_REMOTE_READ)

/* A buffer of @size bytes in device memory, @n chunks of @chunks pages. */
static int devmem_create(const __u32 *chunks, __u32 n, __u64 size, int *err)
{
	return exp_create_chunks(expdev, size, DMABUF_EXP_F_DYNAMIC | DMABUF_EXP_F_DEVMEM,
				 chunks, n, err);
}

/* Whether bytes [@off, @off + @len) of buffer @fd hold pattern @seed. */
static int devmem_holds(int fd, size_t off, size_t len, unsigned int seed)
{
	unsigned char *p = malloc(len);
	int ok = p && !exp_rw_fd(expdev, fd, off, p, len, 0) && same(p, len, seed);

	free(p);
	return ok;
}

/* Writes pattern @seed to bytes [@off, @off + @len) of buffer @fd. */
static int devmem_put(int fd, size_t off, size_t len, unsigned int seed)
{
	unsigned char *p = malloc(len);
	int ok;

	if (!p)
		return 0;
	fill(p, len, seed);
	ok = !exp_rw_fd(expdev, fd, off, p, len, 1);
	free(p);
	return ok;
}

static const char *placement_name(const struct dmabuf_exp_stats *st)
{
	return st->placement == DMABUF_EXP_PLACEMENT_DEVMEM ? "device" : "system";
}

/* SEND of @len bytes from @laddr/@lkey on qa, received at @raddr/@rkey_l on qb. */
static int send_recv(__u64 laddr, __u32 lkey, __u64 raddr, __u32 rlkey, __u32 len)
{
	struct ibv_sge rsge = { .addr = raddr, .length = len, .lkey = rlkey };
	struct ibv_recv_wr rwr = { .sg_list = &rsge, .num_sge = 1 }, *rbad;

	if (ibv_post_recv(qb, &rwr, &rbad)) {
		snprintf(why, sizeof(why), "ibv_post_recv failed");
		return 0;
	}
	return rdma(qa, IBV_WR_SEND, laddr, lkey, len, 0, 0) && poll_cq(1) == 1;
}

/*
 * WRITE, READ and SEND into and out of an MR over a buffer in device memory,
 * dynamic or, with @pinned, pinned. The MR starts at a sub-page offset of a
 * table of three entries, so the importer trims and restores peer-to-peer
 * entries. The buffer must stay in the BAR: rxe's PCI function reaches it,
 * so the exporter maps it peer-to-peer instead of moving it to system memory.
 */
static void devmem_traffic_case(unsigned char *host, struct ibv_mr *hmr, int pinned)
{
	static const __u32 layout[] = { 16, 32, 16 };
	const char *tag = pinned ? "devmem_pinned" : "devmem";
	const size_t off = PAGE + 100, len = (DEVMEM_PAGES - 2) * PAGE;
	const __u64 iova = 0x7e0000000000ULL + 100;
	struct dmabuf_exp_stats st;
	unsigned char *map;
	int err, ok, fd;
	struct dmr mr;

	if (pinned && system("echo 1 > " PINNED_PARAM)) {
		result(0, "%s: rdma_rxe dmabuf_pinned parameter writable", tag);
		return;
	}
	fd = devmem_create(layout, 3, DEVMEM_PAGES * PAGE, &err);
	st = exp_stats(fd);
	result(fd >= 0 && st.placement == DMABUF_EXP_PLACEMENT_DEVMEM,
	       "%s: buffer_in_device_memory (errno %d)", tag, err);
	if (fd < 0)
		goto out;
	err = reg_dmabuf_mr(off, len, iova, fd, ACCESS_ALL, &mr);
	result(!err, "%s: reg_dmabuf_mr (errno %d)", tag, err);
	if (err) {
		close(fd);
		goto out;
	}
	fill(host, len, 31);
	ok = rdma(qa, IBV_WR_RDMA_WRITE, (uintptr_t)host, hmr->lkey, len, iova, mr.rkey);
	result(ok && devmem_holds(fd, off, len, 31), "%s: rdma_write_into_devmem%s", tag,
	       why_failed());
	map = mmap(NULL, DEVMEM_PAGES * PAGE, PROT_READ, MAP_SHARED, fd, 0);
	result(map != MAP_FAILED && same(map + off, len, 31), "%s: cpu_mapping_shows_the_write",
	       tag);
	if (map != MAP_FAILED)
		munmap(map, DEVMEM_PAGES * PAGE);
	st = exp_stats(fd);
	result(st.placement == DMABUF_EXP_PLACEMENT_DEVMEM && st.p2p_maps >= 1,
	       "%s: mapped_peer_to_peer (in %s memory, %llu peer-to-peer maps)", tag,
	       placement_name(&st), (unsigned long long)st.p2p_maps);

	ok = devmem_put(fd, off, len, 32);
	memset(host, 0, len);
	ok = ok && rdma(qa, IBV_WR_RDMA_READ, (uintptr_t)host, hmr->lkey, len, iova, mr.rkey);
	result(ok && same(host, len, 32), "%s: rdma_read_from_devmem%s", tag, why_failed());

	fill(host, len, 33);
	ok = send_recv((uintptr_t)host, hmr->lkey, iova, mr.lkey, len);
	result(ok && devmem_holds(fd, off, len, 33), "%s: send_into_devmem%s", tag,
	       why_failed());

	ok = devmem_put(fd, off, len, 34);
	memset(host, 0, len);
	ok = ok && send_recv(iova, mr.lkey, (uintptr_t)host, hmr->lkey, len);
	result(ok && same(host, len, 34), "%s: send_from_devmem%s", tag, why_failed());

	if (pinned) {
		ok = exp_migrate_fd(expdev, fd, 0, DMABUF_EXP_MIGRATE_F_TO_SYSTEM) == EBUSY &&
		     exp_migrate(fd, 0) == EBUSY;
		st = exp_stats(fd);
		result(ok && st.pins == 1 && st.placement == DMABUF_EXP_PLACEMENT_DEVMEM,
		       "%s: pinned_mr_refuses_to_move (pins %llu, in %s memory)", tag,
		       (unsigned long long)st.pins, placement_name(&st));
	}
	result(!dereg_mr(&mr), "%s: dereg", tag);
	close(fd);
out:
	if (pinned)
		result(!system("echo 0 > " PINNED_PARAM), "%s: dynamic_mode_restored", tag);
}

#define EXP_PCI_DRIVER "/sys/bus/pci/drivers/dmabuf_exporter_rs"

/* Writes @bdf to the exporter's PCI driver file @op ("bind", "unbind"). */
static int exp_pci(const char *op, const char *bdf)
{
	char path[128];
	int fd, ok;

	snprintf(path, sizeof(path), EXP_PCI_DRIVER "/%s", op);
	fd = open(path, O_WRONLY);
	if (fd < 0)
		return 0;
	ok = write(fd, bdf, strlen(bdf)) == (ssize_t)strlen(bdf);
	close(fd);
	return ok;
}

/* The PCI address of the device memory's device, bound to the exporter. */
static int exp_pci_device(char *bdf, size_t size)
{
	struct dirent *e;
	DIR *d = opendir(EXP_PCI_DRIVER);
	int found = 0;

	while (d && !found && (e = readdir(d)))
		if (strchr(e->d_name, ':') && strlen(e->d_name) < size) {
			memcpy(bdf, e->d_name, strlen(e->d_name) + 1);
			found = 1;
		}
	if (d)
		closedir(d);
	return found;
}

/*
 * Unbinding the device whose BAR is the device memory revokes that memory:
 * a buffer there under a dynamic MR moves to system memory, its importer
 * told first, and the unbind returns without waiting for userspace to let
 * go (as GPU drivers evict VRAM and vfio-pci revokes a BAR). The contents
 * move with it, and the MR keeps working on the moved buffer. The device is
 * bound again afterwards, and its memory serves new buffers.
 */
static void devmem_unbind_case(unsigned char *host, struct ibv_mr *hmr)
{
	const size_t len = 4 * PAGE;
	const __u64 iova = 0x7d0000000000ULL;
	struct dmabuf_exp_stats st;
	char bdf[64];
	int err, ok, fd;
	struct dmr mr;

	if (!exp_pci_device(bdf, sizeof(bdf))) {
		result(0, "devmem_unbind: device_bound_to_the_exporter");
		return;
	}
	fd = devmem_create(NULL, 0, len, &err);
	result(fd >= 0 && exp_stats(fd).placement == DMABUF_EXP_PLACEMENT_DEVMEM,
	       "devmem_unbind: buffer_in_device_memory (errno %d)", err);
	if (fd < 0)
		return;
	err = reg_dmabuf_mr(0, len, iova, fd, ACCESS_ALL, &mr);
	result(!err, "devmem_unbind: reg_dmabuf_mr (errno %d)", err);
	if (err) {
		close(fd);
		return;
	}
	fill(host, len, 41);
	ok = rdma(qa, IBV_WR_RDMA_WRITE, (uintptr_t)host, hmr->lkey, len, iova, mr.rkey);
	result(ok && devmem_holds(fd, 0, len, 41), "devmem_unbind: rdma_write_into_devmem%s",
	       why_failed());

	/* Returns only once the device memory is released: with the MR live. */
	ok = exp_pci("unbind", bdf);
	st = exp_stats(fd);
	result(ok && st.placement == DMABUF_EXP_PLACEMENT_SYSTEM && st.migrations == 1 &&
	       st.move_notifies == 1 && st.mappings == 0,
	       "devmem_unbind: unbind_moves_the_buffer_out (in %s memory, %llu migrations, %llu notified, %llu mapped)",
	       placement_name(&st), (unsigned long long)st.migrations,
	       (unsigned long long)st.move_notifies, (unsigned long long)st.mappings);
	result(devmem_holds(fd, 0, len, 41), "devmem_unbind: contents_moved_along");
	fill(host, len, 42);
	ok = rdma(qa, IBV_WR_RDMA_WRITE, (uintptr_t)host, hmr->lkey, len, iova, mr.rkey);
	result(ok && devmem_holds(fd, 0, len, 42), "devmem_unbind: mr_works_after_revoke%s",
	       why_failed());
	st = exp_stats(fd);
	result(st.p2p_maps == 1 && st.mappings == 1,
	       "devmem_unbind: remapped_in_system_memory (%llu peer-to-peer maps, %llu mapped)",
	       (unsigned long long)st.p2p_maps, (unsigned long long)st.mappings);
	result(!dereg_mr(&mr), "devmem_unbind: dereg");
	close(fd);

	ok = exp_pci("bind", bdf);
	fd = devmem_create(NULL, 0, len, &err);
	result(ok && fd >= 0 && exp_stats(fd).placement == DMABUF_EXP_PLACEMENT_DEVMEM,
	       "devmem_unbind: bound_again_serves_device_memory (errno %d)", err);
	if (fd >= 0)
		close(fd);
}

static int mr_record(unsigned long ino, char *out, size_t len);
static int attr_is(const char *r, const char *name, const char *value);

/*
 * Starts "unbind" of @bdf in a child, which may block in the driver; 0 on
 * failure to fork.
 */
static pid_t exp_pci_unbind_async(const char *bdf)
{
	pid_t pid = fork();

	if (!pid)
		_exit(exp_pci("unbind", bdf) ? 0 : 1);
	return pid < 0 ? 0 : pid;
}

/*
 * Whether the unbind in child @pid ended (successfully) within @secs
 * seconds; with @secs 0, waits for it however long it takes.
 */
static int unbind_ended(pid_t pid, double secs)
{
	double end = now() + secs;
	int status;

	while (secs && waitpid(pid, &status, WNOHANG) == 0) {
		if (now() > end)
			return 0;
		usleep(20000);
	}
	if (!secs && waitpid(pid, &status, 0) != pid)
		return 0;
	return WIFEXITED(status) && !WEXITSTATUS(status);
}

/*
 * Unbinding the device memory's device under pinned MRs. A revocable pinned
 * MR (rxe's dmabuf_revocable=1) pins its buffer in device memory; the unbind
 * revokes it first (vfio-pci's, amdgpu's and xe's rule: importers that can
 * let go are made to), so the buffer moves out and the unbind returns at
 * once, the MR revoked. A plain pinned MR cannot be revoked: the unbind
 * waits (saying so in the kernel log) and moves the buffer out as soon as
 * the MR is deregistered, with the buffer's fd still open.
 */
static void devmem_unbind_pinned_case(unsigned char *host, struct ibv_mr *hmr)
{
	const size_t len = 4 * PAGE;
	const __u64 iova = 0x7c0000000000ULL;
	struct dmabuf_exp_stats st;
	char bdf[64], r[1024];
	int err, ok, fd;
	struct stat sb;
	struct dmr mr;
	pid_t pid;

	if (!exp_pci_device(bdf, sizeof(bdf))) {
		result(0, "devmem_unbind_pinned: device_bound_to_the_exporter");
		return;
	}
	fd = devmem_create(NULL, 0, len, &err);
	if (fd < 0 || fstat(fd, &sb)) {
		result(0, "devmem_unbind_pinned: buffer (errno %d)", err);
		return;
	}
	err = write_file(RXE_REVOCABLE_PARAM, "1") ? -1 :
	      reg_dmabuf_mr(0, len, iova, fd, ACCESS_ALL, &mr);
	if (write_file(RXE_REVOCABLE_PARAM, "0") && !err) {
		dereg_mr(&mr);
		err = -1;
	}
	st = exp_stats(fd);
	result(!err && st.pins == 1 && st.placement == DMABUF_EXP_PLACEMENT_DEVMEM,
	       "devmem_unbind_pinned: revocable_mr_pins_in_device_memory (errno %d, %llu pins, in %s memory)",
	       err, (unsigned long long)st.pins, placement_name(&st));
	if (err) {
		close(fd);
		return;
	}
	fill(host, len, 43);
	ok = rdma(qa, IBV_WR_RDMA_WRITE, (uintptr_t)host, hmr->lkey, len, iova, mr.rkey);
	result(ok && devmem_holds(fd, 0, len, 43), "devmem_unbind_pinned: rdma_write_into_devmem%s",
	       why_failed());
	pid = exp_pci_unbind_async(bdf);
	ok = pid && unbind_ended(pid, 30);
	result(ok, "devmem_unbind_pinned: unbind_revokes_a_revocable_pin_and_returns");
	if (pid && !ok) {
		/* Let the unbind go, so that the cases after this one run. */
		dereg_mr(&mr);
		close(fd);
		unbind_ended(pid, 0);
		exp_pci("bind", bdf);
		return;
	}
	st = exp_stats(fd);
	result(st.placement == DMABUF_EXP_PLACEMENT_SYSTEM && st.pins == 0 && st.mappings == 0 &&
	       devmem_holds(fd, 0, len, 43),
	       "devmem_unbind_pinned: moved_out_with_its_contents (in %s memory, %llu pins, %llu mapped)",
	       placement_name(&st), (unsigned long long)st.pins, (unsigned long long)st.mappings);
	ok = !rdma(qa, IBV_WR_RDMA_WRITE, (uintptr_t)host, hmr->lkey, PAGE, iova, mr.rkey) &&
	     last_status == IBV_WC_REM_ACCESS_ERR;
	result(ok && mr_record(sb.st_ino, r, sizeof(r)) && attr_is(r, "dmabuf_revoked", "1"),
	       "devmem_unbind_pinned: mr_revoked (status %s)", ibv_wc_status_str(last_status));
	result(!dereg_mr(&mr), "devmem_unbind_pinned: dereg_revoked");
	close(fd);

	/* A pin that cannot be revoked: the unbind waits until it goes. */
	ok = exp_pci("bind", bdf);
	fd = devmem_create(NULL, 0, len, &err);
	err = fd < 0 ? err : write_file(PINNED_PARAM, "1") ? -1 :
	      reg_dmabuf_mr(0, len, iova, fd, ACCESS_ALL, &mr);
	if (write_file(PINNED_PARAM, "0") && !err) {
		dereg_mr(&mr);
		err = -1;
	}
	st = exp_stats(fd);
	result(ok && !err && st.pins == 1 && st.placement == DMABUF_EXP_PLACEMENT_DEVMEM,
	       "devmem_unbind_pinned: bound_again_pinned_mr_in_device_memory (errno %d, in %s memory)",
	       err, placement_name(&st));
	if (err) {
		if (fd >= 0)
			close(fd);
		return;
	}
	pid = exp_pci_unbind_async(bdf);
	ok = pid && !unbind_ended(pid, 1);
	result(ok, "devmem_unbind_pinned: unbind_waits_for_a_pin_that_cannot_be_revoked");
	result(!dereg_mr(&mr), "devmem_unbind_pinned: dereg_pinned");
	ok = pid && unbind_ended(pid, 30);
	st = exp_stats(fd);
	result(ok && st.placement == DMABUF_EXP_PLACEMENT_SYSTEM && st.pins == 0,
	       "devmem_unbind_pinned: unbind_moves_it_out_once_unpinned (in %s memory, %llu pins)",
	       placement_name(&st), (unsigned long long)st.pins);
	close(fd);
	if (pid && !ok)
		unbind_ended(pid, 0);
	ok = exp_pci("bind", bdf);
	fd = devmem_create(NULL, 0, len, &err);
	result(ok && fd >= 0 && exp_stats(fd).placement == DMABUF_EXP_PLACEMENT_DEVMEM,
	       "devmem_unbind_pinned: bound_again_serves_device_memory (errno %d)", err);
	if (fd >= 0)
		close(fd);
}

/*
 * Device memory <-> system memory under traffic: writes into a dynamic MR
 * while the buffer moves both ways, first in turn with the writes, then from
 * a second thread while writes stream. Nothing written may be lost, and the
 * MR must follow the buffer into the BAR again (peer-to-peer maps).
 */
static void devmem_migration_case(unsigned char *host, struct ibv_mr *hmr)
{
	const __u64 iova = 0x600000;
	struct migrator m = { .rounds = 30, .devmem = 1 };
	unsigned char last[4] = { 0 };
	struct dmabuf_exp_stats st;
	int err, ok, i, region;
	pthread_t thread;
	struct dmr mr;
	__u32 to;

	m.fd = devmem_create(NULL, 0, 16 * PAGE, &err);
	err = m.fd < 0 ? err : reg_dmabuf_mr(0, 16 * PAGE, iova, m.fd, ACCESS_ALL, &mr);
	result(!err, "devmem_migrations: reg_dmabuf_mr (errno %d)", err);
	if (err)
		goto out;
	ok = 1;
	for (i = 0; i < 20; i++) {
		region = i % 4;
		to = i % 2 ? DMABUF_EXP_MIGRATE_F_TO_DEVMEM : DMABUF_EXP_MIGRATE_F_TO_SYSTEM;
		fill(host, 4 * PAGE, 120 + i);
		ok &= rdma(qa, IBV_WR_RDMA_WRITE, (uintptr_t)host, hmr->lkey, 4 * PAGE,
			   iova + region * 4 * PAGE, mr.rkey);
		ok &= exp_migrate_fd(expdev, m.fd, i % 3 ? 0 : 20, to) == 0;
		ok &= devmem_holds(m.fd, region * 4 * PAGE, 4 * PAGE, 120 + i);
	}
	st = exp_stats(m.fd);
	result(ok, "devmem_migrations: writes_during_20_moves_no_corruption%s", why_failed());
	result(st.migrations == 20 && st.move_notifies >= 20 && st.p2p_maps >= 10 &&
	       st.placement == DMABUF_EXP_PLACEMENT_DEVMEM,
	       "devmem_migrations: moved_both_ways_and_remapped (migrations %llu, notified %llu, peer-to-peer maps %llu, in %s memory)",
	       (unsigned long long)st.migrations, (unsigned long long)st.move_notifies,
	       (unsigned long long)st.p2p_maps, placement_name(&st));
	ok = !pthread_create(&thread, NULL, migrate_loop, &m);
	for (i = 0; ok && i < 60; i++) {
		region = i % 4;
		fill(host + region * 4 * PAGE, 4 * PAGE, 160 + i);
		ok &= rdma(qa, IBV_WR_RDMA_WRITE, (uintptr_t)host + region * 4 * PAGE, hmr->lkey,
			   4 * PAGE, iova + region * 4 * PAGE, mr.rkey);
		last[region] = 160 + i;
	}
	pthread_join(thread, NULL);
	for (region = 0; region < 4; region++)
		ok &= devmem_holds(m.fd, region * 4 * PAGE, 4 * PAGE, last[region]);
	st = exp_stats(m.fd);
	result(ok && !m.failed,
	       "devmem_migrations: writes_during_concurrent_moves_no_corruption (%llu migrations, %d failed%s)",
	       (unsigned long long)st.migrations, m.failed, why_failed());
	result(!dereg_mr(&mr), "devmem_migrations: dereg");
out:
	if (m.fd >= 0)
		close(m.fd);
}

/*
 * witness TAG CMD [TAG CMD ...]: data in device memory for the host to check
 * after the boot (scripts/devmem_check.py reads the BAR's backing file).
 * For each TAG, with the importer then in use: three buffers of 16 pages in
 * one range of the BAR each, written by an RDMA WRITE, by a SEND, and by the
 * exporter (then read over RDMA and compared); a line "devmem-witness TAG OP
 * offset=OFFSET len=LEN seed=SEED" says where each is and what it holds.
 * CMD runs after TAG (to switch importers). Every buffer stays open until the
 * end, so no two share memory; none is used after, so the BAR keeps them.
 */
static int witness_fds[16], witness_n;

static void witness_one(const char *tag, const char *op, int seed, unsigned char *host,
			struct ibv_mr *hmr)
{
	static const __u32 one_chunk[] = { 16 };
	const size_t len = 16 * PAGE;
	const __u64 iova = 0x700000;
	struct dmabuf_exp_stats st;
	int err, ok, fd;
	struct dmr mr;

	fd = devmem_create(one_chunk, 1, len, &err);
	err = fd < 0 ? err : reg_dmabuf_mr(0, len, iova, fd, ACCESS_ALL, &mr);
	result(!err, "witness %s %s: reg_dmabuf_mr (errno %d)", tag, op, err);
	if (err)
		goto out;
	fill(host, len, seed);
	if (!strcmp(op, "write")) {
		ok = rdma(qa, IBV_WR_RDMA_WRITE, (uintptr_t)host, hmr->lkey, len, iova, mr.rkey);
	} else if (!strcmp(op, "send")) {
		ok = send_recv((uintptr_t)host, hmr->lkey, iova, mr.lkey, len);
	} else {
		ok = devmem_put(fd, 0, len, seed);
		memset(host, 0, len);
		ok = ok && rdma(qa, IBV_WR_RDMA_READ, (uintptr_t)host, hmr->lkey, len, iova,
				mr.rkey) && same(host, len, seed);
	}
	ok = ok && devmem_holds(fd, 0, len, seed);
	st = exp_stats(fd);
	ok = ok && st.p2p_maps >= 1 && st.devmem_offset != DMABUF_EXP_NO_OFFSET;
	result(ok, "witness %s %s: in_device_memory_peer_to_peer (offset %#llx%s)", tag, op,
	       (unsigned long long)st.devmem_offset, why_failed());
	if (ok)
		printf("# devmem-witness %s %s offset=%#llx len=%zu seed=%d\n", tag, op,
		       (unsigned long long)st.devmem_offset, len, seed);
	dereg_mr(&mr);
out:
	if (fd >= 0 && witness_n < 16)
		witness_fds[witness_n++] = fd;
	else if (fd >= 0)
		close(fd);
}

static void witness_mode(int argc, char **argv, unsigned char *host, struct ibv_mr *hmr)
{
	int i, seed = 70, rust;

	for (i = 0; i + 1 < argc; i += 2, seed += 10) {
		rust = !access("/sys/module/umem_dmabuf_rs", F_OK);
		result(!strcmp(argv[i], rust ? "rust" : "c"), "witness %s: importer in use is %s",
		       argv[i], rust ? "rust" : "c");
		witness_one(argv[i], "write", seed + 1, host, hmr);
		witness_one(argv[i], "send", seed + 2, host, hmr);
		witness_one(argv[i], "read", seed + 3, host, hmr);
		result(!system(argv[i + 1]), "witness %s: then %s", argv[i], argv[i + 1]);
	}
	while (witness_n)
		close(witness_fds[--witness_n]);
}

/* CPU access to a dma-buf's mmap, between DMA_BUF_IOCTL_SYNC start and end. */
static int cpu_same(int fd, const unsigned char *p, size_t len, unsigned int seed)
{
	int ok = !dmabuf_sync(fd, DMA_BUF_SYNC_START | DMA_BUF_SYNC_READ);

	ok = same(p, len, seed) && ok;
	return !dmabuf_sync(fd, DMA_BUF_SYNC_END | DMA_BUF_SYNC_READ) && ok;
}

static int cpu_fill(int fd, unsigned char *p, size_t len, unsigned int seed)
{
	int ok = !dmabuf_sync(fd, DMA_BUF_SYNC_START | DMA_BUF_SYNC_WRITE);

	fill(p, len, seed);
	return !dmabuf_sync(fd, DMA_BUF_SYNC_END | DMA_BUF_SYNC_WRITE) && ok;
}

/* Sets rxe's dmabuf_pinned (read at registration); 0 or -1. */
static int rxe_pinned(int pinned)
{
	char cmd[96];

	snprintf(cmd, sizeof(cmd), "echo %d > /sys/module/rdma_rxe/parameters/dmabuf_pinned",
		 pinned);
	return system(cmd) ? -1 : 0;
}

/*
 * A buffer under vfio-pci's rules (DMABUF_EXP_F_REVOCABLE): a pinned MR
 * cannot be revoked, so its attachment is refused; a dynamic MR's mapping is
 * revoked, the exporter waiting until rxe has unmapped it (and saying how
 * long); while revoked, an access fails like one with a bad key and a
 * registration with ENODEV; after the restore the same MR works again.
 */
static void revocable_case(unsigned char *host, struct ibv_mr *hmr)
{
	const size_t size = 16 * PAGE;
	const __u64 iova = 0x500000;
	struct dmabuf_exp_revoke rv, again;
	struct dmabuf_exp_stats st;
	int err, e, ok, fd, plain;
	struct dmr mr, other;

	fd = exp_create_chunks(expdev, size, DMABUF_EXP_F_DYNAMIC | DMABUF_EXP_F_REVOCABLE,
			       NULL, 0, &err);
	result(fd >= 0, "revocable_buffer_created (errno %d)", err);
	if (fd < 0)
		return;
	e = rxe_pinned(1) ? -1 : reg_dmabuf_mr(0, size, iova, fd, ACCESS_ALL, &other);
	if (rxe_pinned(0))
		e = -1;
	result(e == EOPNOTSUPP, "pinned_mr_on_revocable_buffer_eopnotsupp (errno %d)", e);
	if (!e)
		dereg_mr(&other);

	err = reg_dmabuf_mr(0, size, iova, fd, ACCESS_ALL, &mr);
	fill(host, size, 41);
	ok = !err && rdma(qa, IBV_WR_RDMA_WRITE, (uintptr_t)host, hmr->lkey, size, iova,
			  mr.rkey) && devmem_holds(fd, 0, size, 41);
	result(ok, "dynamic_mr_on_revocable_buffer_writes (errno %d%s)", err, why_failed());
	e = exp_revoke_fd(expdev, fd, 0, &rv);
	st = exp_stats(fd);
	result(ok && !e && rv.unmapped >= 1 && rv.wait_ns > 0 && st.mappings == 0,
	       "revoke_waits_until_unmapped (errno %d, %llu mapping(s) unmapped in %.3f ms, %llu left)",
	       e, (unsigned long long)rv.unmapped, rv.wait_ns / 1e6,
	       (unsigned long long)st.mappings);
	ok = !err && !rdma(qa, IBV_WR_RDMA_WRITE, (uintptr_t)host, hmr->lkey, PAGE, iova,
			   mr.rkey) && last_status == IBV_WC_REM_ACCESS_ERR;
	result(ok, "access_while_revoked_fails_like_a_bad_key (status %s)",
	       ibv_wc_status_str(last_status));
	e = reg_dmabuf_mr(0, size, iova + size, fd, ACCESS_ALL, &other);
	result(e == ENODEV, "registration_while_revoked_enodev (errno %d)", e);
	if (!e)
		dereg_mr(&other);
	result(exp_revoke_fd(expdev, fd, 0, &again) == EALREADY &&
	       !exp_revoke_fd(expdev, fd, 1, &again) &&
	       exp_revoke_fd(expdev, fd, 1, &again) == EALREADY,
	       "revoke_and_restore_twice_ealready");
	fill(host, size, 42);
	ok = !err && rdma(qa, IBV_WR_RDMA_WRITE, (uintptr_t)host, hmr->lkey, size, iova,
			  mr.rkey) && devmem_holds(fd, 0, size, 42);
	result(ok, "same_mr_writes_after_restore%s", why_failed());
	if (!err)
		dereg_mr(&mr);
	close(fd);
	plain = exp_create(PAGE, &err);
	result(plain >= 0 && exp_revoke_fd(expdev, plain, 0, &rv) == EINVAL,
	       "revoke_of_a_buffer_that_is_not_revocable_einval");
	if (plain >= 0)
		close(plain);
}

/*
 * The record of "rdma -j -dd resource show mr" (iproute2's rdma tool, rdma
 * netlink) whose driver attribute dmabuf_ino ("drv_dmabuf_ino" in JSON) is
 * @ino: the JSON object, copied to @out. 0 if there is none.
 */
static int mr_record(unsigned long ino, char *out, size_t len)
{
	static char buf[1 << 16];
	FILE *f = popen("rdma -j -dd resource show mr 2>&1", "r");
	char needle[48], *p, *start, *end;
	size_t n;

	if (!f)
		return 0;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	pclose(f);
	buf[n] = 0;
	snprintf(needle, sizeof(needle), "\"drv_dmabuf_ino\":%lu", ino);
	p = strstr(buf, needle);
	if (!p || (p[strlen(needle)] != ',' && p[strlen(needle)] != '}')) {
		printf("    # no MR of dma-buf inode %lu in: %.600s\n", ino, buf);
		return 0;
	}
	for (start = p; start > buf && *start != '{'; start--)
		;
	end = strchr(p, '}');
	if (!end || (size_t)(end - start) + 2 > len)
		return 0;
	memcpy(out, start, end - start + 1);
	out[end - start + 1] = 0;
	printf("    # %s\n", out);
	return 1;
}

/*
 * Whether JSON record @r has driver attribute @name ("drv_@name") with the
 * value @value, a string or a number.
 */
static int attr_is(const char *r, const char *name, const char *value)
{
	char key[64];
	const char *p;
	size_t n = strlen(value);

	snprintf(key, sizeof(key), "\"drv_%s\":", name);
	p = strstr(r, key);
	if (!p)
		return 0;
	p += strlen(key);
	if (*p == '"')
		return !strncmp(p + 1, value, n) && p[n + 1] == '"';
	return !strncmp(p, value, n) && (p[n] == ',' || p[n] == '}');
}

/*
 * rxe's driver attributes of dma-buf MRs in rdma netlink, read with the real
 * rdma tool: a dynamic MR on a buffer in device memory is unmapped until its
 * first access, then mapped peer-to-peer; moved to system memory, it counts
 * one invalidation and, after the next access, a second map in system
 * memory, as the exporter counts them; a pinned MR is mapped once, at
 * registration.
 */
static void netlink_case(unsigned char *host, struct ibv_mr *hmr)
{
	const size_t size = 4 * PAGE;
	const __u64 iova = 0x600000;
	struct dmabuf_exp_stats st;
	struct stat sb;
	char r[1024];
	int err, fd, ok;
	struct dmr mr;

	fd = devmem_create(NULL, 0, size, &err);
	if (fd < 0 || fstat(fd, &sb)) {
		result(0, "netlink_devmem_buffer (errno %d)", err);
		if (fd >= 0)
			close(fd);
		return;
	}
	err = reg_dmabuf_mr(0, size, iova, fd, ACCESS_ALL, &mr);
	ok = !err && mr_record(sb.st_ino, r, sizeof(r));
	result(ok && attr_is(r, "dmabuf_exporter", "dmabuf_exporter_rs") &&
	       attr_is(r, "dmabuf_mode", "dynamic") && attr_is(r, "dmabuf_placement", "unmapped") &&
	       attr_is(r, "dmabuf_maps", "0") && attr_is(r, "dmabuf_invalidations", "0"),
	       "netlink_dynamic_mr_unmapped_before_its_first_access (errno %d)", err);
	fill(host, size, 51);
	ok = !err && rdma(qa, IBV_WR_RDMA_WRITE, (uintptr_t)host, hmr->lkey, size, iova,
			  mr.rkey) && mr_record(sb.st_ino, r, sizeof(r));
	result(ok && attr_is(r, "dmabuf_placement", "p2p") && attr_is(r, "dmabuf_maps", "1") &&
	       attr_is(r, "dmabuf_invalidations", "0"),
	       "netlink_mapped_peer_to_peer_after_a_write%s", why_failed());
	ok = !err && !exp_migrate_fd(expdev, fd, 0, DMABUF_EXP_MIGRATE_F_TO_SYSTEM) &&
	     rdma(qa, IBV_WR_RDMA_WRITE, (uintptr_t)host, hmr->lkey, size, iova, mr.rkey) &&
	     mr_record(sb.st_ino, r, sizeof(r));
	st = exp_stats(fd);
	result(ok && attr_is(r, "dmabuf_placement", "system") && attr_is(r, "dmabuf_maps", "2") &&
	       attr_is(r, "dmabuf_invalidations", "1") && st.move_notifies == 1 && st.maps == 2,
	       "netlink_moved_to_system_memory_as_the_exporter_counts (exporter: %llu move_notifies, %llu maps)",
	       (unsigned long long)st.move_notifies, (unsigned long long)st.maps);
	if (!err)
		dereg_mr(&mr);
	close(fd);

	fd = exp_create(size, &err);
	if (fd < 0 || fstat(fd, &sb)) {
		result(0, "netlink_pinned_buffer (errno %d)", err);
		if (fd >= 0)
			close(fd);
		return;
	}
	err = rxe_pinned(1) ? -1 : reg_dmabuf_mr(0, size, iova, fd, ACCESS_ALL, &mr);
	ok = !rxe_pinned(0) && !err && mr_record(sb.st_ino, r, sizeof(r));
	result(ok && attr_is(r, "dmabuf_mode", "pinned") &&
	       attr_is(r, "dmabuf_placement", "system") && attr_is(r, "dmabuf_maps", "1"),
	       "netlink_pinned_mr_mapped_at_registration (errno %d)", err);
	if (!err)
		dereg_mr(&mr);
	close(fd);
}

/*
 * The umem trace events in tracefs (include/trace/events/ib_umem_dmabuf.h).
 * trace_start() records them from now on (0; -1 if this kernel has no
 * tracing); trace_count() stops and counts the events of the umem that a
 * registration of @size bytes of descriptor @fd made, by the umem that its
 * get event names.
 */
#define TRACEFS "/sys/kernel/tracing"
struct umem_events {
	int gets, maps, map_errors, unmaps, unmaps_mapped, revokes, releases, lost;
	/*
	 * rxe's own (rxe_dmabuf:*): re-maps at an access, failed accesses,
	 * invalidations (of a mapped MR) and the longest one's time
	 */
	int remaps, remap_errors, faults, faults_revoked, invalidates, invalidates_mapped;
	unsigned long long invalidate_max_ns;
};

static int tracefs_write(const char *file, const char *s)
{
	char path[128];
	int fd, ok;

	snprintf(path, sizeof(path), TRACEFS "/%s", file);
	fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ok = write(fd, s, strlen(s)) == (ssize_t)strlen(s);
	close(fd);
	return ok ? 0 : -1;
}

static int trace_start(void)
{
	if (access(TRACEFS "/events/ib_umem_dmabuf", F_OK) &&
	    system("mount -t tracefs nodev " TRACEFS " 2>/dev/null"))
		return -1;
	return tracefs_write("tracing_on", "0") || tracefs_write("buffer_size_kb", "4096") ||
	       tracefs_write("trace", "") || tracefs_write("events/ib_umem_dmabuf/enable", "1") ||
	       tracefs_write("events/rxe_dmabuf/enable", "1") ||
	       tracefs_write("tracing_on", "1") ? -1 : 0;
}

static void trace_stop(void)
{
	tracefs_write("tracing_on", "0");
	tracefs_write("events/ib_umem_dmabuf/enable", "0");
	tracefs_write("events/rxe_dmabuf/enable", "0");
}

/* rxe's event in @line, of umem @id: counted into @ev. */
static void rxe_event(const char *line, const char *e, struct umem_events *ev)
{
	int ok = !!strstr(line, " err=0");

	if (!strncmp(e, "remap:", 6)) {
		ev->remaps += ok;
		ev->remap_errors += !ok;
	} else if (!strncmp(e, "fault:", 6)) {
		ev->faults++;
		ev->faults_revoked += !!strstr(line, " revoked=1");
	} else if (!strncmp(e, "invalidate:", 11)) {
		const char *t = strstr(line, " ns=");
		unsigned long long ns = t ? strtoull(t + 4, NULL, 10) : 0;

		ev->invalidates++;
		ev->invalidates_mapped += !!strstr(line, " mapped=1");
		if (ns > ev->invalidate_max_ns)
			ev->invalidate_max_ns = ns;
	}
}

static struct umem_events trace_count(int fd, size_t size)
{
	struct umem_events ev = { 0 };
	char *line = NULL, umem[40] = "", want[64];
	unsigned long in_buffer, written;
	size_t cap = 0;
	FILE *f;

	trace_stop();
	f = fopen(TRACEFS "/trace", "re");
	if (!f) {
		ev.lost = -1;
		return ev;
	}
	snprintf(want, sizeof(want), " fd=%d offset=0 size=%zu ", fd, size);
	while (getline(&line, &cap, f) > 0) {
		char *e = strstr(line, "ib_umem_dmabuf_"), *u = strstr(line, "umem=");
		/* The event's name, not the task's (rxe_dmabuf_test). */
		char *x = strstr(line, " rxe_dmabuf_remap: ");
		char id[40];

		if (sscanf(line, "# entries-in-buffer/entries-written: %lu/%lu", &in_buffer,
			   &written) == 2)
			ev.lost = in_buffer != written;
		if (!x)
			x = strstr(line, " rxe_dmabuf_fault: ");
		if (!x)
			x = strstr(line, " rxe_dmabuf_invalidate: ");
		if ((!e && !x) || !u || sscanf(u, "umem=%39s", id) != 1)
			continue;
		if (x) {
			if (*umem && !strcmp(id, umem))
				rxe_event(line, x + strlen(" rxe_dmabuf_"), &ev);
			continue;
		}
		e += strlen("ib_umem_dmabuf_");
		if (!strncmp(e, "get:", 4) && strstr(line, want) && strstr(line, " err=0")) {
			snprintf(umem, sizeof(umem), "%s", id);
			ev.gets++;
		}
		if (!*umem || strcmp(id, umem))
			continue;
		if (!strncmp(e, "map:", 4)) {
			ev.maps += !!strstr(line, " err=0");
			ev.map_errors += !strstr(line, " err=0");
		} else if (!strncmp(e, "unmap:", 6)) {
			ev.unmaps++;
			ev.unmaps_mapped += !!strstr(line, " mapped=1");
		} else if (!strncmp(e, "revoke:", 7)) {
			ev.revokes++;
		} else if (!strncmp(e, "release:", 8)) {
			ev.releases++;
		}
	}
	free(line);
	fclose(f);
	return ev;
}

/* A driver attribute of rdma netlink JSON record @r as a number; -1 if none. */
static long long attr_num(const char *r, const char *name)
{
	char key[64];
	const char *p;

	snprintf(key, sizeof(key), "\"drv_%s\":", name);
	p = strstr(r, key);
	return p ? strtoll(p + strlen(key), NULL, 10) : -1;
}

/*
 * The same moves counted three ways: by the exporter (its statistics), by
 * rxe (rdma netlink's dmabuf_maps and dmabuf_invalidations) and by the umem
 * trace events, which ib_core emits for either importer. A dynamic MR on a
 * buffer in device memory is first written after each of 10 moves, so that
 * every move costs exactly one invalidation, one unmap and one re-map; then
 * it is written 60 times while a second thread moves it 30 times, where an
 * invalidation can come while nothing is mapped and a move can wait for a
 * copy: the three counts must still agree, every map be followed by an
 * unmap, and no invalidation be followed by more than one re-map.
 */
static void storm_counts_case(unsigned char *host, struct ibv_mr *hmr)
{
	const size_t size = 8 * PAGE;
	const __u64 iova = 0x700000;
	struct migrator m = { .rounds = 30, .devmem = 1 };
	long long nl_maps = -1, nl_inv = -1, nl_maps1 = -1, nl_inv1 = -1;
	struct dmabuf_exp_stats st, st1 = { 0 };
	struct umem_events ev;
	struct stat sb;
	pthread_t thread;
	int err, ok, i;
	struct dmr mr;
	char r[1024];

	if (trace_start()) {
		result(0, "storm_counts: umem_trace_events_recorded (no " TRACEFS
			  "/events/ib_umem_dmabuf)");
		return;
	}
	m.fd = devmem_create(NULL, 0, size, &err);
	if (m.fd < 0 || fstat(m.fd, &sb)) {
		result(0, "storm_counts: devmem_buffer (errno %d)", err);
		goto out;
	}
	err = reg_dmabuf_mr(0, size, iova, m.fd, ACCESS_ALL, &mr);
	result(!err, "storm_counts: reg_dmabuf_mr (errno %d)", err);
	if (err)
		goto out;
	ok = 1;
	for (i = 0; i < 10; i++) {
		fill(host, size, 70 + i);
		ok &= rdma(qa, IBV_WR_RDMA_WRITE, (uintptr_t)host, hmr->lkey, size, iova, mr.rkey);
		ok &= !exp_migrate_fd(expdev, m.fd, i % 3 ? 0 : 5,
				      i % 2 ? DMABUF_EXP_MIGRATE_F_TO_DEVMEM :
				      DMABUF_EXP_MIGRATE_F_TO_SYSTEM);
	}
	ok &= rdma(qa, IBV_WR_RDMA_WRITE, (uintptr_t)host, hmr->lkey, size, iova, mr.rkey);
	st1 = exp_stats(m.fd);
	if (ok && mr_record(sb.st_ino, r, sizeof(r))) {
		nl_maps1 = attr_num(r, "dmabuf_maps");
		nl_inv1 = attr_num(r, "dmabuf_invalidations");
	}
	result(ok && st1.migrations == 10 && st1.move_notifies == 10 && st1.maps == 11 &&
	       nl_inv1 == 10 && nl_maps1 == 11,
	       "storm_counts: each_move_one_invalidation_and_one_remap (exporter: %llu moves, %llu notified, %llu maps; netlink: %lld invalidations, %lld maps%s)",
	       (unsigned long long)st1.migrations, (unsigned long long)st1.move_notifies,
	       (unsigned long long)st1.maps, nl_inv1, nl_maps1, why_failed());

	if (pthread_create(&thread, NULL, migrate_loop, &m)) {
		result(0, "storm_counts: migrating_thread");
		dereg_mr(&mr);
		goto out;
	}
	ok = 1;
	for (i = 0; ok && i < 60; i++) {
		fill(host, size, 100 + i);
		ok &= rdma(qa, IBV_WR_RDMA_WRITE, (uintptr_t)host, hmr->lkey, size, iova, mr.rkey);
	}
	pthread_join(thread, NULL);
	/* Mapped at the end: every map but this one has been unmapped. */
	ok = ok && !m.failed &&
	     rdma(qa, IBV_WR_RDMA_WRITE, (uintptr_t)host, hmr->lkey, size, iova, mr.rkey);
	st = exp_stats(m.fd);
	if (ok && mr_record(sb.st_ino, r, sizeof(r))) {
		nl_maps = attr_num(r, "dmabuf_maps");
		nl_inv = attr_num(r, "dmabuf_invalidations");
	}
	result(ok && st.migrations == 40 && st.move_notifies == st.migrations &&
	       nl_inv == (long long)st.move_notifies && nl_maps == (long long)st.maps &&
	       st.maps <= st.move_notifies + 1,
	       "storm_counts: netlink_counts_as_the_exporter_under_concurrent_moves (exporter: %llu moves, %llu notified, %llu maps; netlink: %lld invalidations, %lld maps%s)",
	       (unsigned long long)st.migrations, (unsigned long long)st.move_notifies,
	       (unsigned long long)st.maps, nl_inv, nl_maps, why_failed());
	/* Counted before the release, which unmaps the last map. */
	ev = trace_count(m.fd, size);
	result(!ev.lost && ev.gets == 1 && !ev.releases && !ev.map_errors &&
	       ev.maps == (long long)st.maps && ev.unmaps == (long long)st.move_notifies &&
	       ev.unmaps_mapped == ev.maps - 1,
	       "storm_counts: trace_events_count_as_the_exporter (%d gets, %d maps, %d failed maps, %d unmaps of which %d mapped, %d releases, lost %d)",
	       ev.gets, ev.maps, ev.map_errors, ev.unmaps, ev.unmaps_mapped, ev.releases,
	       ev.lost);
	/* A dynamic MR is mapped at an access only: each map one rxe re-map. */
	result(!ev.lost && ev.remaps == ev.maps && !ev.remap_errors && !ev.faults,
	       "storm_counts: rxe_remap_events_one_per_map (%d re-maps, %d failed, %d faults, %d maps)",
	       ev.remaps, ev.remap_errors, ev.faults, ev.maps);
	/*
	 * rxe's callback, timed to the importer's unmap done: one per move,
	 * a mapped MR's each the one mapped unmap, none near a second.
	 */
	result(!ev.lost && ev.invalidates == (long long)st.move_notifies &&
	       ev.invalidates == nl_inv && ev.invalidates_mapped == ev.unmaps_mapped &&
	       ev.invalidate_max_ns < 1000000000ULL,
	       "storm_counts: rxe_invalidate_events_one_per_move (%d invalidations, %d of a mapped MR, longest %.3f ms; netlink %lld, %d mapped unmaps)",
	       ev.invalidates, ev.invalidates_mapped, ev.invalidate_max_ns / 1e6, nl_inv,
	       ev.unmaps_mapped);
	result(!dereg_mr(&mr), "storm_counts: dereg");
out:
	trace_stop();
	if (m.fd >= 0)
		close(m.fd);
}

/*
 * A revocable pinned MR (rxe's dmabuf_revocable=1) on a buffer under
 * vfio-pci's rules, which refuses a plain pinned one: pinned and mapped at
 * registration, written; the revocation waits until rxe has unmapped it,
 * and the importer unpins; from then on an access fails like one with a bad
 * key, after the buffer's restore too (a revocation is for good), and is
 * traced as a fault; rdma netlink shows the MR revocable, then revoked and
 * unmapped; the umem's revoke event is there once.
 */
static void revocable_pinned_case(unsigned char *host, struct ibv_mr *hmr)
{
	const size_t size = 16 * PAGE;
	const __u64 iova = 0x900000;
	struct dmabuf_exp_revoke rv, restored;
	struct dmabuf_exp_stats st;
	struct umem_events ev;
	int err, e, ok, fd;
	struct stat sb;
	struct dmr mr;
	char r[1024];

	if (trace_start()) {
		result(0, "revocable_pinned: trace_events_recorded");
		return;
	}
	fd = exp_create_chunks(expdev, size, DMABUF_EXP_F_DYNAMIC | DMABUF_EXP_F_REVOCABLE,
			       NULL, 0, &err);
	if (fd < 0 || fstat(fd, &sb)) {
		result(0, "revocable_pinned: buffer (errno %d)", err);
		goto out;
	}
	err = write_file(RXE_REVOCABLE_PARAM, "1") ? -1 :
	      reg_dmabuf_mr(0, size, iova, fd, ACCESS_ALL, &mr);
	if (write_file(RXE_REVOCABLE_PARAM, "0") && !err) {
		dereg_mr(&mr);
		err = -1;
	}
	st = exp_stats(fd);
	result(!err && st.pins == 1 && st.mappings == 1,
	       "revocable_pinned: registered_pinned_and_mapped (errno %d, %llu pins, %llu mappings)",
	       err, (unsigned long long)st.pins, (unsigned long long)st.mappings);
	if (err)
		goto out;
	fill(host, size, 61);
	ok = rdma(qa, IBV_WR_RDMA_WRITE, (uintptr_t)host, hmr->lkey, size, iova, mr.rkey) &&
	     devmem_holds(fd, 0, size, 61);
	result(ok, "revocable_pinned: writes%s", why_failed());
	ok = mr_record(sb.st_ino, r, sizeof(r)) && attr_is(r, "dmabuf_mode", "revocable") &&
	     attr_is(r, "dmabuf_placement", "system") && attr_is(r, "dmabuf_revoked", "0");
	result(ok, "revocable_pinned: netlink_revocable_and_mapped");

	e = exp_revoke_fd(expdev, fd, 0, &rv);
	st = exp_stats(fd);
	result(!e && rv.unmapped == 1 && st.mappings == 0 && st.pins == 0,
	       "revocable_pinned: revoke_waits_until_unmapped_and_unpinned (errno %d, %llu unmapped in %.3f ms, %llu mappings and %llu pins left)",
	       e, (unsigned long long)rv.unmapped, rv.wait_ns / 1e6,
	       (unsigned long long)st.mappings, (unsigned long long)st.pins);
	ok = !rdma(qa, IBV_WR_RDMA_WRITE, (uintptr_t)host, hmr->lkey, PAGE, iova, mr.rkey) &&
	     last_status == IBV_WC_REM_ACCESS_ERR;
	result(ok, "revocable_pinned: access_after_revocation_fails_like_a_bad_key (status %s)",
	       ibv_wc_status_str(last_status));
	ok = mr_record(sb.st_ino, r, sizeof(r)) && attr_is(r, "dmabuf_revoked", "1") &&
	     attr_is(r, "dmabuf_placement", "unmapped");
	result(ok, "revocable_pinned: netlink_revoked_and_unmapped");

	e = exp_revoke_fd(expdev, fd, 1, &restored);
	ok = !e && !rdma(qa, IBV_WR_RDMA_WRITE, (uintptr_t)host, hmr->lkey, PAGE, iova, mr.rkey) &&
	     last_status == IBV_WC_REM_ACCESS_ERR;
	st = exp_stats(fd);
	result(ok && st.mappings == 0 && st.pins == 0,
	       "revocable_pinned: still_revoked_after_the_restore (errno %d, status %s, %llu mappings)",
	       e, ibv_wc_status_str(last_status), (unsigned long long)st.mappings);
	/* Counted before the release, whose revoke finds it revoked already. */
	ev = trace_count(fd, size);
	result(!ev.lost && ev.gets == 1 && ev.maps == 1 && ev.revokes == 1 && !ev.remaps &&
	       ev.faults == 2 && ev.faults_revoked == 2,
	       "revocable_pinned: trace_events (%d gets, %d maps, %d revokes, %d re-maps, %d faults of which %d revoked, lost %d)",
	       ev.gets, ev.maps, ev.revokes, ev.remaps, ev.faults, ev.faults_revoked, ev.lost);
	result(!dereg_mr(&mr), "revocable_pinned: dereg");
	st = exp_stats(fd);
	result(st.attachments == 0, "revocable_pinned: detached (%llu attachments)",
	       (unsigned long long)st.attachments);
out:
	trace_stop();
	if (fd >= 0)
		close(fd);
}

/*
 * A buffer of @size bytes from KIND "heap" (the system dma-heap) or "vgem"
 * (a GEM object of vgem, exported with PRIME; *vgem is its device, opened
 * here, and *handle the object's GEM handle); -1 with *err set if not.
 */
static int foreign_alloc(const char *kind, size_t size, int *vgem, __u32 *handle, int *err)
{
	*vgem = -1;
	if (strcmp(kind, "vgem"))
		return heap_alloc(size, err);
	*vgem = vgem_open();
	if (*vgem < 0) {
		*err = ENODEV;
		return -1;
	}
	return vgem_alloc(*vgem, size, handle, err);
}

/* Unmaps and closes what foreign_alloc() and mmap() gave (each may be unset). */
static void foreign_free(unsigned char *map, size_t size, int fd, int vgem)
{
	if (map != MAP_FAILED)
		munmap(map, size);
	if (fd >= 0)
		close(fd);
	if (vgem >= 0)
		close(vgem);
}

/*
 * dma-buf MRs on buffers of the kernel's own exporters, KIND "heap" or
 * "vgem", dynamic or, with @pinned, pinned. Neither exporter has pin or
 * move callbacks: a dynamic importer's every map goes to the exporter's
 * map_dma_buf and nothing ever tells it to let go, so both kinds of MR
 * behave alike here. Two MRs on one buffer of 16 pages, A over all of it and
 * B over [PAGE + 100, 9 pages): WRITE and READ through each, SEND out of one
 * and into the other, every byte checked through the exporter's own mmap
 * (between DMA_BUF_IOCTL_SYNC start and end); B deregistered while A still
 * maps the buffer; then the descriptor (and vgem's GEM handle) closed while
 * A lives: the MR alone keeps the buffer, and its deregistration frees it.
 */
static void foreign_case(const char *kind, int pinned, unsigned char *host, struct ibv_mr *hmr)
{
	const __u32 acc = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			  IBV_ACCESS_REMOTE_READ;
	const size_t size = 16 * PAGE, boff = PAGE + 100;
	const __u64 ia = 0x600000, ib = 0x700000 + 100;
	const char *exp = strcmp(kind, "vgem") ? HEAP_EXP_NAME : VGEM_EXP_NAME;
	int err = 0, vgem, fd, ra = 0, rb = 0, ok, open_n, closed_n, freed_n, att;
	unsigned char *map = MAP_FAILED;
	__u32 handle = 0;
	struct dmr a, b;
	char tag[32];

	snprintf(tag, sizeof(tag), "%s%s", kind, pinned ? "_pinned" : "");
	fd = foreign_alloc(kind, size, &vgem, &handle, &err);
	if (fd >= 0)
		map = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	result(fd >= 0 && map != MAP_FAILED, "%s: buffer_allocated (errno %d)", tag, err);
	if (fd < 0 || map == MAP_FAILED)
		goto out;
	ok = !rxe_pinned(pinned);
	ra = ok && !(err = reg_dmabuf_mr(0, size, ia, fd, acc, &a));
	rb = ra && !(err = reg_dmabuf_mr(boff, 9 * PAGE - boff, ib, fd, acc, &b));
	ok = !rxe_pinned(0) && ok;
	result(ok && ra && rb, "%s: two_mrs_registered (errno %d)", tag, err);
	if (!ok || !ra || !rb)
		goto out;

	fill(host, 2 * PAGE, 70);
	ok = rdma(qa, IBV_WR_RDMA_WRITE, (uintptr_t)host, hmr->lkey, 2 * PAGE, ib + PAGE, b.rkey);
	ok = ok && cpu_same(fd, map + boff + PAGE, 2 * PAGE, 70);
	ok = ok && cpu_fill(fd, map + 10 * PAGE, 2 * PAGE, 71);
	memset(host, 0, 2 * PAGE);
	ok = ok && rdma(qa, IBV_WR_RDMA_READ, (uintptr_t)host, hmr->lkey, 2 * PAGE,
			ia + 10 * PAGE, a.rkey);
	result(ok && same(host, 2 * PAGE, 71), "%s: write_and_read_through_two_mrs%s", tag,
	       why_failed());

	ok = cpu_fill(fd, map + 3 * PAGE, PAGE, 72);
	memset(host, 0, PAGE);
	ok = ok && send_recv(ia + 3 * PAGE, a.lkey, (uintptr_t)host, hmr->lkey, PAGE);
	ok = ok && same(host, PAGE, 72);
	fill(host, PAGE, 73);
	ok = ok && send_recv((uintptr_t)host, hmr->lkey, ib + 4 * PAGE, b.lkey, PAGE);
	result(ok && cpu_same(fd, map + boff + 4 * PAGE, PAGE, 73),
	       "%s: send_out_of_and_into_mrs%s", tag, why_failed());

	ok = !dereg_mr(&b);
	rb = 0;
	fill(host, PAGE, 74);
	ok = ok && rdma(qa, IBV_WR_RDMA_WRITE, (uintptr_t)host, hmr->lkey, PAGE,
			ia + 12 * PAGE, a.rkey);
	result(ok && cpu_same(fd, map + 12 * PAGE, PAGE, 74), "%s: dereg_one_other_still_maps%s",
	       tag, why_failed());

	open_n = dmabufs_of(exp, &att);
	munmap(map, size);
	map = MAP_FAILED;
	close(fd);
	fd = -1;
	ok = vgem < 0 || !vgem_close_handle(vgem, handle);
	closed_n = dmabufs_of(exp, &att);
	fill(host, PAGE, 75);
	ok = ok && rdma(qa, IBV_WR_RDMA_WRITE, (uintptr_t)host, hmr->lkey, PAGE,
			ia + 5 * PAGE, a.rkey);
	memset(host + PAGE, 0, PAGE);
	ok = ok && rdma(qa, IBV_WR_RDMA_READ, (uintptr_t)host + PAGE, hmr->lkey, PAGE,
			ia + 5 * PAGE, a.rkey);
	ok = ok && same(host + PAGE, PAGE, 75);
	ok = !dereg_mr(&a) && ok;
	ra = 0;
	freed_n = dmabufs_of(exp, &att);
	result(ok && open_n >= 1 && closed_n == open_n && freed_n == open_n - 1,
	       "%s: mr_keeps_the_buffer_after_close (buffers %d, closed %d, deregistered %d%s)",
	       tag, open_n, closed_n, freed_n, why_failed());
out:
	if (rb)
		dereg_mr(&b);
	if (ra)
		dereg_mr(&a);
	foreign_free(map, size, fd, vgem);
}

struct late_signal {
	int vgem, err;
	__u32 fence;
};

static void *signal_later(void *arg)
{
	struct late_signal *l = arg;

	usleep(200 * 1000);
	l->err = vgem_signal(l->vgem, l->fence);
	return NULL;
}

/*
 * Fences from a real driver: vgem puts an unsignalled fence into a GEM
 * object's reservation object, for writing or for reading, as a GPU's
 * implicit synchronisation does. In 7.3 the C importer waits in map_pages
 * for kernel fences only (DMA_RESV_USAGE_KERNEL: an exporter's moves), and
 * the core waits for nothing when it maps for a dynamic importer (and for
 * kernel fences only for a static one); write and read fences are the
 * importing driver's business. So registration and the first access go
 * ahead with the fence unsignalled, dynamic and pinned, on either importer:
 * each must finish well within vgem's 10 s timeout. A fence that another
 * thread signals late is signalled as usual; one nobody signals ends with
 * vgem's timeout (FENCE_SIGNAL then says ETIMEDOUT), the MRs still working.
 * No CPU access here is synchronised (DMA_BUF_IOCTL_SYNC would wait for the
 * fences); x86 memory is coherent.
 */
static void vgem_fences_case(unsigned char *host, struct ibv_mr *hmr)
{
	const __u32 acc = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			  IBV_ACCESS_REMOTE_READ;
	const size_t size = 4 * PAGE;
	const __u64 ia = 0x800000, ib = 0x900000;
	int err = 0, vgem, fd, ra = 0, rb = 0, ok, late_ok;
	double t0, t_reg, t_write, attached;
	struct late_signal late = { 0 };
	unsigned char *map = MAP_FAILED;
	__u32 handle = 0, fw, fr;
	struct dmr a, b;
	pthread_t th;

	fd = foreign_alloc("vgem", size, &vgem, &handle, &err);
	if (fd >= 0)
		map = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	result(fd >= 0 && map != MAP_FAILED, "vgem_fences: buffer_allocated (errno %d)", err);
	if (fd < 0 || map == MAP_FAILED)
		goto out;

	fw = vgem_fence(vgem, handle, 1, &err);
	t0 = now();
	ra = fw && !(err = reg_dmabuf_mr(0, size, ia, fd, acc, &a));
	t_reg = now() - t0;
	fill(host, PAGE, 80);
	t0 = now();
	ok = ra && rdma(qa, IBV_WR_RDMA_WRITE, (uintptr_t)host, hmr->lkey, PAGE, ia + PAGE,
			a.rkey);
	t_write = now() - t0;
	result(ok && same(map + PAGE, PAGE, 80) && t_reg < 5 && t_write < 5,
	       "vgem_fences: write_fence_not_waited_for (errno %d, reg %.2f s, first write %.2f s%s)",
	       err, t_reg, t_write, why_failed());
	if (!ra)
		goto out;

	late.vgem = vgem;
	late.fence = fw;
	late_ok = !pthread_create(&th, NULL, signal_later, &late);
	late_ok = late_ok && !pthread_join(th, NULL);
	fill(host, PAGE, 81);
	ok = rdma(qa, IBV_WR_RDMA_WRITE, (uintptr_t)host, hmr->lkey, PAGE, ia + 2 * PAGE, a.rkey);
	result(late_ok && late.err == 0 && ok && same(map + 2 * PAGE, PAGE, 81),
	       "vgem_fences: write_fence_signalled_late_by_another_thread (errno %d%s)", late.err,
	       why_failed());

	fr = vgem_fence(vgem, handle, 0, &err);
	attached = now();
	ok = fr && !rxe_pinned(1);
	t0 = now();
	rb = ok && !(err = reg_dmabuf_mr(0, size, ib, fd, acc, &b));
	t_reg = now() - t0;
	ok = !rxe_pinned(0) && ok;
	fill(map + 3 * PAGE, PAGE, 82);
	memset(host, 0, PAGE);
	ok = ok && rb && rdma(qa, IBV_WR_RDMA_READ, (uintptr_t)host, hmr->lkey, PAGE,
			      ib + 3 * PAGE, b.rkey);
	result(ok && same(host, PAGE, 82) && t_reg < 5,
	       "vgem_fences: read_fence_pinned_mr_not_waited_for (errno %d, reg %.2f s%s)", err,
	       t_reg, why_failed());

	/* Nobody signals the read fence: vgem's timer does, 10 s after it came. */
	while (now() - attached < 11)
		usleep(100 * 1000);
	err = vgem_signal(vgem, fr);
	fill(host, PAGE, 83);
	ok = rdma(qa, IBV_WR_RDMA_WRITE, (uintptr_t)host, hmr->lkey, PAGE, ia, a.rkey);
	ok = ok && same(map, PAGE, 83);
	result(fr && err == ETIMEDOUT && ok,
	       "vgem_fences: unsignalled_fence_ends_with_vgem_timeout (signal: errno %d%s)", err,
	       why_failed());
out:
	if (rb && dereg_mr(&b))
		result(0, "vgem_fences: dereg pinned");
	if (ra && dereg_mr(&a))
		result(0, "vgem_fences: dereg");
	foreign_free(map, size, fd, vgem);
}

int main(int argc, char **argv)
{
	const size_t big = 32UL << 20;
	unsigned char *host;
	struct ibv_mr *hmr;
	int i, n, ok, left, heap, gem, stress = 0, remove = 0, bounce = 0, witness = 0;
	const char *suite;
	char *netdev = NULL;

	if (argc < 3)
		return 2;
	gidx = atoi(argv[2]);
	for (i = 3; i < argc; i++) {
		stress |= !strcmp(argv[i], "stress");
		remove |= !strcmp(argv[i], "remove");
		if (!strcmp(argv[i], "remove-netdev") && i + 1 < argc) {
			remove = 1;
			netdev = argv[++i];
		}
		bounce |= !strcmp(argv[i], "bounce");
		if (!strcmp(argv[i], "witness")) {
			witness = i + 1;
			break;
		}
	}
	suite = remove ? "rxe_dmabuf_removal" : bounce ? "rxe_dmabuf_bounce" :
		witness ? "rxe_devmem_witness" : "rxe_dmabuf";
	ktap_on_term(suite);
	ctx = open_device_named(argv[1]);
	result(!!ctx, "open_%s", argv[1]);
	if (!ctx)
		goto out;
	rdma_progress_init(&progress, argv[1]);
	expdev = open("/dev/dmabuf_exporter_rs", O_RDWR | O_CLOEXEC);
	pd = ibv_alloc_pd(ctx);
	if (bounce) {
		cq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
		result(pd && cq && expdev >= 0, "pd_cq_exporter");
		if (pd && expdev >= 0)
			bounce_test();
		goto out;
	}
	ok = pd && !ibv_query_gid(ctx, 1, gidx, &gid) && !qps_open();
	result(ok && expdev >= 0, "rc_qps_connected (gid index %d)", gidx);
	if (!ok || expdev < 0)
		goto out;
	host = aligned_alloc(PAGE, big + PAGE);
	hmr = ibv_reg_mr(pd, host, big + PAGE, IBV_ACCESS_LOCAL_WRITE |
			 IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
	result(!!hmr, "host_mr");
	if (!hmr)
		goto out;
	if (remove) {
		char *const link_cmd[] = { "rdma", "link", "delete", argv[1], NULL };
		char *const netdev_cmd[] = { "ip", "link", "del", netdev, NULL };

		removal_test(netdev ? netdev_cmd : link_cmd, host, hmr);
		/* Destroying what the core already destroyed frees the handles. */
		ok = !ibv_dereg_mr(hmr) && !ibv_destroy_qp(qa) && !ibv_destroy_qp(qb) &&
		     !ibv_destroy_cq(cq) && !ibv_dealloc_pd(pd) && !ibv_close_device(ctx);
		result(ok, "teardown_after_removal");
		qa = NULL;
		qb = NULL;
		cq = NULL;
		pd = NULL;
		ctx = NULL;
		free(host);
		goto out;
	}

	if (witness) {
		witness_mode(argc - witness, argv + witness, host, hmr);
		goto done;
	}
	if (wanted("one_page"))
		write_read_case("one_page", PAGE, 0, host, hmr);
	if (wanted("64k_sub_page_offset"))
		write_read_case("64k_sub_page_offset", 64 * 1024, PAGE + 100, host, hmr);
	if (wanted("32m"))
		write_read_case("32m", big, 0, host, hmr);
	if (wanted("send_recv_migrations"))
		send_recv_migrations(host, hmr, stress, argc > 3 && !strcmp(argv[3], "rust"));
	if (wanted("several_mrs"))
		several_mrs_case(host, hmr, 0);
	if (wanted("several_pinned_mrs"))
		several_mrs_case(host, hmr, 1);
	if (wanted("devmem"))
		devmem_traffic_case(host, hmr, 0);
	if (wanted("devmem_pinned"))
		devmem_traffic_case(host, hmr, 1);
	if (wanted("devmem_migrations"))
		devmem_migration_case(host, hmr);
	if (wanted("devmem_unbind"))
		devmem_unbind_case(host, hmr);
	if (wanted("devmem_unbind_pinned"))
		devmem_unbind_pinned_case(host, hmr);
	if (wanted("errnos"))
		errno_cases();
	if (wanted("pinned"))
		pinned_case();
	if (wanted("heap"))
		foreign_case("heap", 0, host, hmr);
	if (wanted("heap_pinned"))
		foreign_case("heap", 1, host, hmr);
	if (wanted("vgem"))
		foreign_case("vgem", 0, host, hmr);
	if (wanted("vgem_pinned"))
		foreign_case("vgem", 1, host, hmr);
	if (wanted("vgem_fences"))
		vgem_fences_case(host, hmr);
	if (wanted("revocable"))
		revocable_case(host, hmr);
	if (wanted("revocable_pinned"))
		revocable_pinned_case(host, hmr);
	if (wanted("netlink"))
		netlink_case(host, hmr);
	if (wanted("storm_counts"))
		storm_counts_case(host, hmr);
	/* Last of the traffic tests: the error moves the QP to the error state. */
	if (wanted("cannot_remap"))
		cannot_remap_case(host, hmr);
done:
	ibv_dereg_mr(hmr);
	free(host);
out:
	verbs_close(qa, qb, cq, pd, ctx);
	/* Every buffer of this test is closed: none may be left. */
	n = dmabufs_of("dmabuf_exporter_rs", &i);
	left = dmabufs_of("udmabuf", &i);
	heap = dmabufs_of(HEAP_EXP_NAME, &i);
	gem = dmabufs_of(VGEM_EXP_NAME, &i);
	result(n == 0 && left == 0 && heap == 0 && gem == 0,
	       "no_dma_bufs_left (%d of the exporter, %d udmabufs, %d of the heap, %d of vgem)", n,
	       left, heap, gem);
	return ktap_report(suite);
}

