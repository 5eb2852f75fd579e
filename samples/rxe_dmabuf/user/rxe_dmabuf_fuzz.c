// SPDX-License-Identifier: GPL-2.0
/*
 * Reliability tests of dma-buf MRs on soft-RoCE through uverbs, run in the
 * guest once per importer; each prints one KTAP suite.
 *
 * Usage: rxe_dmabuf_fuzz DEVICE GID_INDEX IMPORTER MODE [ARGS] [--save FILE |
 *                        --compare FILE]
 *
 *   faults: fault_injection_uverbs_IMPORTER. REG_DMABUF_MR with the k-th
 *	allocation of the registering thread failed (/proc/thread-self/fail-nth),
 *	k = 1, 2, ... until registration no longer reaches a k-th allocation, on
 *	exporter buffers (dynamic and static) and a udmabuf; then with the
 *	exporter's map failing. After every call nothing may be left: no
 *	attachment, pin or mapping of the buffer, one file reference (ours), the
 *	Rust module's reference count back.
 *   replay FILE...: replay_IMPORTER. The fuzz mode's operations with each
 *	FILE's bytes as its choices instead of the generator's (see below()), from
 *	a clean state each: the corpus of make fuzz, replayed in make check.
 *   fuzz SEED OPS: fuzz_IMPORTER. OPS seeded random operations: exporter,
 *	udmabuf, system dma-heap and vgem buffers of random layouts (and invalid
 *	requests; vgem's GEM handle is closed at once), registrations
 *	with offsets, lengths and IOVAs around page and buffer boundaries and
 *	u64 limits, random access flags (also invalid bits), valid, closed and
 *	non-dma-buf fds, dynamic, pinned and revocable pinned (rxe's
 *	dmabuf_pinned and dmabuf_revocable); deregistration, migration,
 *	revocation and restore of buffers under vfio-pci's rules
 *	(DMABUF_EXP_F_REVOCABLE), STATS, close, mmap of odd ranges, and RDMA
 *	WRITEs into registered MRs whose every byte is checked through the CPU
 *	mapping.
 *   regbench PAGES ITERS KIND ROUND: regbench_IMPORTER, one block of make
 *	bench's uverbs benchmarks (see regbench()).
 *   stormbench WORKERS SECONDS ROUND: stormbench_IMPORTER, one block of make
 *	bench's concurrent registration storm (see stormbench()).
 *   storm SECONDS: storm_IMPORTER. Worker processes register and deregister
 *	on shared and private buffers (the exporter's, the system heap's and
 *	vgem's) while a thread migrates the shared ones, a
 *	thread writes to one and checks the data, a thread keeps trying to unload
 *	umem_dmabuf_rs (refused: an MR lives throughout), and workers are killed
 *	at random points and replaced.
 *
 *   afl FILE: make fuzz's target, run by AFL++ once per input: FILE replayed
 *	with the kernel's coverage (KCOV) counted in AFL++'s map; a failed
 *	check or a kernel report (KASAN, UBSAN, lockdep, WARN, BUG) aborts.
 *	Run outside AFL++, the same without the map: a reproducer's check.
 *
 * --pcs FILE (replay) writes the distinct kernel program counters the inputs
 * reached (KCOV) to FILE, for make fuzz's coverage table.
 * --record FILE (fuzz) writes the generator's choices as an input for mode
 * replay that repeats the run (make fuzz's seed corpus).
 * --save FILE writes every outcome (faults, fuzz, replay); --compare FILE fails
 * the suite on the first outcomes that differ from FILE's: the same seed or
 * input must give the same result on both importers.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <infiniband/verbs.h>

#include "bufinfo_user.h"
#include "exporters_user.h"
#include "kcov_user.h"
#include "ktap_user.h"
#include "rdma_user.h"

#define PAGE 4096UL
#define MAXBUF 12
#define MAXMR 24
#define MAX_MRS_PER_BUF 5
#define MAXOPS_LOG (4UL << 20)
/* An input's bytes read, and its operations run, at most. */
#define INPUT_MAX (64UL << 10)
#define INPUT_OPS 4096UL
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static struct ibv_cq *cq;
static struct ibv_qp *qa, *qb;
static union ibv_gid gid;
static int gidx, expdev;
static const char *importer;
static unsigned char *host;
static struct ibv_mr *hmr;
#define HOST_SIZE (256UL << 10)

/* Outcomes, one line each, for --save and --compare. */
static char *outlog;
static size_t outlen;

static void outcome(const char *fmt, ...)
{
	va_list ap;

	if (!outlog || outlen > MAXOPS_LOG - 256)
		return;
	va_start(ap, fmt);
	outlen += vsnprintf(outlog + outlen, MAXOPS_LOG - outlen, fmt, ap);
	va_end(ap);
	outlog[outlen++] = '\n';
	outlog[outlen] = 0;
}

/* Saves the outcomes, or compares them with a saved run; 1 if the same. */
static int outcomes_match(const char *save, const char *compare)
{
	char *other, *a, *b, *ea, *eb;
	int line = 1, diffs = 0;
	FILE *f;
	long n;

	if (save) {
		f = fopen(save, "w");
		if (!f || fwrite(outlog, 1, outlen, f) != outlen || fclose(f))
			return 0;
		return 1;
	}
	f = fopen(compare, "r");
	if (!f)
		return 0;
	other = calloc(1, MAXOPS_LOG + 1);
	n = other ? (long)fread(other, 1, MAXOPS_LOG, f) : -1;
	fclose(f);
	if (n < 0)
		return 0;
	for (a = outlog, b = other; *a || *b; line++) {
		ea = strchrnul(a, '\n');
		eb = strchrnul(b, '\n');
		if (ea - a != eb - b || memcmp(a, b, ea - a)) {
			if (diffs++ < 5)
				printf("    # line %d: %s has '%.*s', this run '%.*s'\n", line,
				       compare, (int)(eb - b), b, (int)(ea - a), a);
		}
		a = *ea ? ea + 1 : ea;
		b = *eb ? eb + 1 : eb;
	}
	free(other);
	if (diffs)
		printf("    # %d of %d outcomes differ\n", diffs, line - 1);
	return !diffs;
}

static __u64 rng_state;

static __u64 rnd(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545F4914F6CDD1DULL;
}

/*
 * The fuzzer's choices come from the seeded generator or, replaying an input
 * (mode replay), from the input's bytes: each choice takes as many bytes as
 * its range needs (one for up to 256 values), so that a changed byte changes
 * one choice and the ones after it stay. Past the input's end every choice
 * is 0, and the operations stop (input_left()).
 */
static const unsigned char *input;
static size_t input_len, input_pos;
/* --record FILE: the generator's choices written as the input that repeats them. */
static FILE *record;

static int input_left(void)
{
	return input_pos < input_len;
}

static __u64 below(__u64 n)
{
	__u64 v = 0, span;
	unsigned int shift = 0;

	if (!n)
		return 0;
	if (!input) {
		v = rnd() % n;
		for (span = n - 1; record && span; span >>= 8, shift += 8)
			fputc((v >> shift) & 0xff, record);
		return v;
	}
	for (span = n - 1; span; span >>= 8, shift += 8)
		if (input_pos < input_len)
			v |= (__u64)input[input_pos++] << shift;
	return v % n;
}

static int module_refs(void)
{
	FILE *f = fopen("/sys/module/umem_dmabuf_rs/refcnt", "r");
	int n = -1;

	if (f) {
		if (fscanf(f, "%d", &n) != 1)
			n = -1;
		fclose(f);
	}
	return n;
}

/* The file reference count of the dma-buf behind @fd (debugfs bufinfo). */
static long dmabuf_file_count(int fd)
{
	FILE *f = fopen("/sys/kernel/debug/dma_buf/bufinfo", "r");
	unsigned long size, ino;
	unsigned int flags, mode;
	long count, found = -1;
	char line[512], exp[64];
	struct stat st;

	if (!f || fstat(fd, &st)) {
		if (f)
			fclose(f);
		return -1;
	}
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%lu %x %x %ld %63s %lu", &size, &flags, &mode, &count,
			   exp, &ino) == 6 && ino == st.st_ino)
			found = count;
	fclose(f);
	return found;
}

static struct rdma_progress progress;

/*
 * Waits for one completion; its status, or -1 when the device made no
 * progress for the stall interval (rdma_user.h).
 */
static int wait_one(void)
{
	struct ibv_wc wc;
	int got;

	rdma_progress_restart(&progress);
	while (!rdma_progress_stalled(&progress)) {
		got = ibv_poll_cq(cq, 1, &wc);
		if (got < 0)
			return -1;
		if (got)
			return wc.status;
	}
	printf("    # no progress for %.0f s waiting for a completion\n", progress.stall);
	return -1;
}

static int connect_pair(void)
{
	struct ibv_qp_init_attr qia = {
		.qp_type = IBV_QPT_RC, .send_cq = cq, .recv_cq = cq,
		.cap = { .max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 1,
			 .max_recv_sge = 1 },
	};

	if (qa)
		ibv_destroy_qp(qa);
	if (qb)
		ibv_destroy_qp(qb);
	qa = ibv_create_qp(pd, &qia);
	qb = ibv_create_qp(pd, &qia);
	return qa && qb && !connect_qp(qa, qb->qp_num, &gid, gidx) &&
	       !connect_qp(qb, qa->qp_num, &gid, gidx) ? 0 : -1;
}

/* RDMA WRITE of @len host bytes to @raddr/@rkey; the completion status. */
static int write_to(__u64 raddr, __u32 rkey, __u32 len)
{
	if (post_rdma(qa, IBV_WR_RDMA_WRITE, (uintptr_t)host, hmr->lkey, len, raddr, rkey))
		return -1;
	return wait_one();
}

static int setup(const char *dev)
{
	ctx = open_device_named(dev);
	expdev = open("/dev/dmabuf_exporter_rs", O_RDWR | O_CLOEXEC);
	if (!ctx || expdev < 0)
		return -1;
	rdma_progress_init(&progress, dev);
	pd = ibv_alloc_pd(ctx);
	cq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	host = aligned_alloc(PAGE, HOST_SIZE);
	if (!pd || !cq || !host || ibv_query_gid(ctx, 1, gidx, &gid))
		return -1;
	hmr = ibv_reg_mr(pd, host, HOST_SIZE, IBV_ACCESS_LOCAL_WRITE);
	return hmr ? connect_pair() : -1;
}

static void teardown(void)
{
	if (hmr)
		ibv_dereg_mr(hmr);
	verbs_close(qa, qb, cq, pd, ctx);
	if (expdev >= 0)
		close(expdev);
	qa = NULL;
	qb = NULL;
	hmr = NULL;
	cq = NULL;
	pd = NULL;
	ctx = NULL;
	expdev = -1;
}

/* Whether no exporter has a buffer left, and the module no reference. */
static void expect_nothing_left(int refs)
{
	int att, n = dmabufs_of("dmabuf_exporter_rs", &att), u = dmabufs_of("udmabuf", &att);
	int h = dmabufs_of(HEAP_EXP_NAME, &att), g = dmabufs_of(VGEM_EXP_NAME, &att);

	result(n == 0 && u == 0 && h == 0 && g == 0,
	       "no_dma_bufs_left (%d of the exporter, %d udmabufs, %d of the heap, %d of vgem)", n,
	       u, h, g);
	if (refs >= 0)
		result(module_refs() == refs, "umem_dmabuf_rs_references_back (%d, was %d)",
		       module_refs(), refs);
}

/* ---- faults ---------------------------------------------------------- */

static int fail_nth_fd = -1;

static void fail_nth_arm(unsigned int k)
{
	char buf[16];
	int n = snprintf(buf, sizeof(buf), "%u", k);

	if (pwrite(fail_nth_fd, buf, n, 0) != n)
		fprintf(stderr, "fail-nth write: %s\n", strerror(errno));
}

/* Disarms; whether the armed failure was injected. */
static int fail_nth_disarm(void)
{
	char buf[16] = "";
	int injected = pread(fail_nth_fd, buf, sizeof(buf) - 1, 0) > 0 && atoi(buf) == 0;

	fail_nth_arm(0);
	return injected;
}

struct fault_kind {
	const char *name;
	int udmabuf;
	__u32 flags;
};

/* A new 8-page buffer of @kd's kind; its fd, or -1. */
static int fault_buffer(const struct fault_kind *kd, unsigned char **map)
{
	int err;

	*map = MAP_FAILED;
	return kd->udmabuf ? udmabuf_create(8 * PAGE, map) :
			     exp_create_chunks(expdev, 8 * PAGE, kd->flags, NULL, 0, &err);
}

static void fault_buffer_close(int fd, unsigned char *map)
{
	if (map != MAP_FAILED)
		munmap(map, 8 * PAGE);
	close(fd);
}

/*
 * Whether nothing of a registration on buffer @fd is left: no attachment,
 * pin or mapping, only our file reference, the module's count at @refs.
 */
static int fault_clean(const struct fault_kind *kd, int fd, int refs, unsigned int k)
{
	struct dmabuf_exp_stats st = { 0 };
	long files = dmabuf_file_count(fd);
	int att;

	if (kd->udmabuf) {
		dmabufs_of("udmabuf", &att);
		st.attachments = att;
	} else {
		st = exp_stats_fd(expdev, fd);
	}
	if (!st.attachments && !st.pins && !st.mappings && files == 1 &&
	    (refs < 0 || module_refs() == refs))
		return 1;
	printf("    # %s, k=%u: attached %llu pinned %llu mapped %llu files %ld refs %d/%d\n",
	       kd->name, k, (unsigned long long)st.attachments, (unsigned long long)st.pins,
	       (unsigned long long)st.mappings, files, module_refs(), refs);
	return 0;
}

/*
 * One REG_DMABUF_MR on a fresh buffer of @kd's kind with the k-th allocation
 * failed (a fresh buffer every time: an exporter may allocate on a buffer's
 * first map only, which would shift the count); deregisters on success.
 * Returns the errno; *injected: whether allocation k was reached. Clears
 * *clean if anything was left behind.
 */
static int fault_try(const struct fault_kind *kd, unsigned int k, int refs, int *clean,
		     int *injected)
{
	const __u32 access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
	unsigned char *map;
	struct dmr mr;
	int fd, err;

	fd = fault_buffer(kd, &map);
	if (fd < 0) {
		*injected = 0;
		return -1;
	}
	fail_nth_arm(k);
	err = uv_reg_dmabuf_mr(ctx->cmd_fd, pd->handle, PAGE, 4 * PAGE, 0x10000, fd, access,
			       &mr);
	*injected = fail_nth_disarm();
	if (!err)
		err = uv_dereg_mr(ctx->cmd_fd, &mr) ? -1 : 0;
	if (*clean)
		*clean = fault_clean(kd, fd, refs, k);
	fault_buffer_close(fd, map);
	return err;
}

/*
 * Allocation k of REG_DMABUF_MR failed, FAULT_ATTEMPTS times on fresh buffers.
 * The registration's own allocations come in a fixed order, but the slab
 * allocator can add allocations of its own that depend on the state of its
 * per-CPU caches, which the boot's history sets: a cache whose per-CPU array
 * of objects (a "sheaf") ran empty or full may kmalloc a new, empty one,
 * which counts for fail-nth like any other allocation, and whose failure is
 * survived (the slow path serves instead). One such allocation in an attempt
 * either lets the registration succeed with k injected, or moves the k-th
 * failure one allocation up, or reaches a k beyond the registration's last
 * allocation.
 * Taken together, the attempts tell the registration's own outcome:
 * allocation k is beyond the last one if any attempt did not reach it (the
 * registration's own k allocations happen every time), its errno is any
 * errno other than ENOMEM seen (reported as a bad errno), else ENOMEM if any
 * attempt saw it, else 0: the registration survives a failure there every
 * time. Returns that errno; *injected: whether allocation k was reached.
 */
#define FAULT_ATTEMPTS 3
static int fault_point(const struct fault_kind *kd, unsigned int k, int refs, int *clean,
		       int *injected, int *bad_errno)
{
	int err = 0, errs[FAULT_ATTEMPTS], i, agree = 1;

	for (i = 0; i < FAULT_ATTEMPTS; i++) {
		errs[i] = fault_try(kd, k, refs, clean, injected);
		/* Beyond the last allocation: this attempt's errno is the call's. */
		if (!*injected)
			return errs[i];
		if (errs[i] && errs[i] != ENOMEM && !(*bad_errno)++)
			printf("    # %s, allocation %u failed: errno %d\n", kd->name, k, errs[i]);
		if (errs[i] && (!err || err == ENOMEM))
			err = errs[i];
		agree &= errs[i] == errs[0];
	}
	if (!agree) {
		printf("    # %s, allocation %u: the attempts gave", kd->name, k);
		for (i = 0; i < FAULT_ATTEMPTS; i++)
			printf(" %d", errs[i]);
		printf(", taken as %d\n", err);
	}
	return err;
}

/*
 * The exporter's pin or map failing with an errno of its own
 * (DMABUF_EXP_IOC_INJECT): where registration pins or maps, it must fail
 * with that errno; nothing may be left either way. A static buffer is
 * mapped at attach; pinned MRs (rxe's dmabuf_pinned=1, read at
 * registration) pin and map at registration; a dynamic MR maps at its first
 * access (the e2e test covers that), so it registers.
 */
/*
 * Whether the running kernel maps a static exporter's buffer when a dynamic
 * importer attaches (dma_buf_dynamic_attach() cached that mapping up to
 * 6.x; 7.x maps at map time), so that a failing map fails registration.
 */
static int static_map_at_attach(void)
{
	struct utsname u;

	return uname(&u) || atoi(u.release) < 7;
}

static void exporter_failure_cases(int refs)
{
	static const struct {
		const char *name;
		__u32 pin_errno, map_errno;
		const char *pinned;	/* rxe's dmabuf_pinned */
		struct fault_kind kind;
		int want;
	} cases[] = {
		/* The want of static_map is set below. */
		{ "static_map", 0, ENOSPC, "0", { "exporter_static", 0, 0 }, ENOSPC },
		{ "dynamic_map", 0, ENOSPC, "0",
		  { "exporter_dynamic", 0, DMABUF_EXP_F_DYNAMIC }, 0 },
		{ "pinned_map", 0, ENOSPC, "1",
		  { "exporter_dynamic", 0, DMABUF_EXP_F_DYNAMIC }, ENOSPC },
		{ "pinned_pin", ENXIO, 0, "1",
		  { "exporter_dynamic", 0, DMABUF_EXP_F_DYNAMIC }, ENXIO },
	};
	const char *param = "/sys/module/rdma_rxe/parameters/dmabuf_pinned";
	const __u32 access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		unsigned char *map;
		int fd, err, want, clean = 0;
		struct dmr mr;

		fd = fault_buffer(&cases[i].kind, &map);
		err = -1;
		if (fd >= 0 && !write_file(param, cases[i].pinned) &&
		    !exp_inject_fd(expdev, fd, cases[i].pin_errno, cases[i].map_errno))
			err = uv_reg_dmabuf_mr(ctx->cmd_fd, pd->handle, PAGE, 4 * PAGE, 0x10000,
					       fd, access, &mr);
		write_file(param, "0");
		if (!err)
			uv_dereg_mr(ctx->cmd_fd, &mr);
		if (fd >= 0) {
			clean = fault_clean(&cases[i].kind, fd, refs, 0);
			fault_buffer_close(fd, map);
		}
		outcome("exporter_failure %s %d", cases[i].name, err);
		/* Otherwise the map fails at first access, as for dynamic_map. */
		want = i == 0 && !static_map_at_attach() ? 0 : cases[i].want;
		result(err == want && clean,
		       "exporter_%s_failure_errno (%d, want %d)", cases[i].name, err, want);
	}
}

static void faults(void)
{
	static const struct fault_kind kinds[] = {
		{ "exporter_dynamic", 0, DMABUF_EXP_F_DYNAMIC },
		{ "exporter_static", 0, 0 },
		{ "udmabuf", 1, 0 },
	};
	int refs = module_refs(), total = 0;
	unsigned int i, k;

	fail_nth_fd = open("/proc/thread-self/fail-nth", O_RDWR);
	result(fail_nth_fd >= 0, "proc_thread_self_fail_nth");
	if (fail_nth_fd < 0)
		return;
	for (i = 0; i < ARRAY_SIZE(kinds); i++) {
		const struct fault_kind *kd = &kinds[i];
		int err = 0, injected = 0, clean = 1, points = -1, bad_errno = 0;
		char errnos[512] = "", point[96];
		size_t used = 0;

		for (k = 1; k < 400; k++) {
			err = fault_point(kd, k, refs, &clean, &injected, &bad_errno);
			if (!injected) {
				points = k - 1;
				break;
			}
			outcome("%s %u %d", kd->name, k, err);
			snprintf(point, sizeof(point), "fault sweep of %s, allocation %u",
				 kd->name, k);
			ktap_progress(point);
			if (used < sizeof(errnos) - 8)
				used += snprintf(errnos + used, sizeof(errnos) - used, " %d", err);
		}
		result(points >= 0 && err == 0, "%s_registers_with_nothing_failed (errno %d)",
		       kd->name, err);
		outcome("%s points %d", kd->name, points);
		result(!bad_errno, "%s_every_failure_is_enomem", kd->name);
		printf("    # %s importer, REG_DMABUF_MR on %s: %d injection points, errnos:%s\n",
		       importer, kd->name, points, used ? errnos : " none");
		result(points >= 3, "%s_swept (%d injection points)", kd->name, points);
		result(clean, "%s_nothing_left_after_any_failure", kd->name);
		total += points > 0 ? points : 0;
	}
	printf("    # %d injection points in all\n", total);
	exporter_failure_cases(refs);
}

/* ---- fuzz ------------------------------------------------------------ */

struct fbuf {
	int used, fd;		/* fd -1: closed (the mapping keeps the buffer) */
	size_t size;
	unsigned char *map;
	int mrs;
};

struct fmr {
	int live, buf;
	struct dmr mr;
	__u64 off, len, iova;
	__u32 access;
};

static struct fbuf bufs[MAXBUF];
static struct fmr mrs[MAXMR];
static unsigned long corruptions, writes_ok, regs_ok, regs_failed, regs_revocable;
/* Buffers of the exporter checked after every MR was deregistered; dirty. */
static unsigned long bufs_checked, bufs_dirty;
/* Revocations done; those that left a pin or a mapping behind. */
static unsigned long revocations, revocations_incomplete;

enum {
	OP_CREATE, OP_UDMABUF, OP_REG, OP_DEREG, OP_MIGRATE, OP_STATS, OP_CLOSE,
	OP_MMAP, OP_WRITE, OP_HEAP, OP_VGEM, OP_N
};

static const char *const op_names[OP_N] = {
	"create", "udmabuf", "reg", "dereg", "migrate", "stats", "close", "mmap", "write",
	"heap", "vgem",
};

/* vgem's device for OP_VGEM (-1 without vgem: the op fails alike on both importers). */
static int vgem_dev = -1;

static unsigned long op_count[OP_N], op_errors[OP_N];

static int pick_buf(int need_fd)
{
	int i, n = 0, idx[MAXBUF];

	for (i = 0; i < MAXBUF; i++)
		if (bufs[i].used && (!need_fd || bufs[i].fd >= 0))
			idx[n++] = i;
	return n ? idx[below(n)] : -1;
}

static int pick_mr(void)
{
	int i, n = 0, idx[MAXMR];

	for (i = 0; i < MAXMR; i++)
		if (mrs[i].live)
			idx[n++] = i;
	return n ? idx[below(n)] : -1;
}

/*
 * An exporter's buffer @b with no MR must have no attachment, pin or
 * mapping left (whatever moves, revocations and restores came before); a
 * dirty one is counted in bufs_dirty.
 */
static void buf_check_clean(int b)
{
	/* Zeroed for a closed one, or one of another exporter. */
	struct dmabuf_exp_stats st = exp_stats_fd(expdev, bufs[b].fd);

	bufs_checked += !!st.version;
	if ((st.attachments || st.pins || st.mappings) && bufs_dirty++ < 3)
		printf("    # buffer %d: %llu attached, %llu pinned, %llu mapped\n", b,
		       (unsigned long long)st.attachments, (unsigned long long)st.pins,
		       (unsigned long long)st.mappings);
}

/* Frees buffer @b once it is closed and no MR uses it. */
static void buf_maybe_free(int b)
{
	if (bufs[b].used && bufs[b].fd < 0 && !bufs[b].mrs) {
		munmap(bufs[b].map, bufs[b].size);
		memset(&bufs[b], 0, sizeof(bufs[b]));
	}
}

static int free_slot_buf(void)
{
	int i;

	for (i = 0; i < MAXBUF; i++)
		if (!bufs[i].used)
			return i;
	return -1;
}

/* A value around the interesting boundaries of a buffer of @size bytes. */
static __u64 boundary(size_t size)
{
	static const __u64 fixed[] = {
		0, 1, PAGE - 1, PAGE, PAGE + 1, 2 * PAGE, ~0ULL, ~0ULL - PAGE + 1,
		1ULL << 63, (1ULL << 32) - 1, 1ULL << 32,
	};

	switch (below(6)) {
	case 0:
		return fixed[below(ARRAY_SIZE(fixed))];
	case 1:
		return size + below(3) - 1;
	case 2:
		return size - PAGE * below(3);
	default:
		return below(size + 1);
	}
}

/* Maps dma-buf @fd of @size bytes and tracks it in slot @b; 0, or 1000 + errno. */
static int buf_track(int b, int fd, size_t size)
{
	bufs[b].map = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (bufs[b].map == MAP_FAILED) {
		close(fd);
		return 1000 + errno;
	}
	bufs[b].used = 1;
	bufs[b].fd = fd;
	bufs[b].size = size;
	return 0;
}

static int op_create(void)
{
	__u32 chunks[32], flags = below(3) ? DMABUF_EXP_F_DYNAMIC : 0, n = 0;
	__u64 pages = 1 + below(32), size = pages * PAGE, left = pages;
	int b = free_slot_buf(), fd, err;

	if (b < 0)
		return -2;
	if (!below(8))
		flags |= 1U << (1 + below(31));		/* unknown flag */
	/* Under vfio-pci's rules: only importers that can be revoked. */
	if ((flags & DMABUF_EXP_F_DYNAMIC) && !below(3))
		flags |= DMABUF_EXP_F_REVOCABLE;
	while (left && n < 32 && below(2)) {
		__u32 c = 1U << below(5);

		if (c > left)
			c = 1;
		chunks[n++] = c;
		left -= c;
	}
	if (n && left)
		chunks[n - 1] += below(6) ? left : left + 1;	/* mostly adds up */
	switch (below(16)) {
	case 0:
		size = 0;
		break;
	case 1:
		size += 1 + below(PAGE - 1);	/* not page aligned */
		break;
	case 2:
		size = 1ULL << (33 + below(30));	/* too big */
		break;
	}
	fd = exp_create_chunks(expdev, size, flags, n ? chunks : NULL, n, &err);
	if (fd < 0)
		return err;
	return buf_track(b, fd, size);
}

static int op_udmabuf(void)
{
	int b = free_slot_buf(), fd;
	size_t size = (1 + below(16)) * PAGE;

	if (b < 0)
		return -2;
	fd = udmabuf_create(size, &bufs[b].map);
	if (fd < 0)
		return errno ? errno : -1;
	bufs[b].used = 1;
	bufs[b].fd = fd;
	bufs[b].size = size;
	return 0;
}

/* A buffer of another exporter: "heap" or "vgem", 1 to 16 pages. */
static int op_foreign(int vgem)
{
	int b = free_slot_buf(), fd, err;
	size_t size = (1 + below(16)) * PAGE;
	__u32 handle;

	if (b < 0)
		return -2;
	if (vgem) {
		fd = vgem_dev < 0 ? -1 : vgem_alloc(vgem_dev, size, &handle, &err);
		if (vgem_dev < 0)
			err = ENODEV;
		/* The dma-buf alone keeps the GEM object from here on. */
		if (fd >= 0 && vgem_close_handle(vgem_dev, handle)) {
			close(fd);
			return 4000;
		}
	} else {
		fd = heap_alloc(size, &err);
	}
	if (fd < 0)
		return err ? err : -1;
	return buf_track(b, fd, size);
}

#define FUZZ_PINNED_PARAM "/sys/module/rdma_rxe/parameters/dmabuf_pinned"

static int op_reg(void)
{
	static const __u32 valid[] = {
		IBV_ACCESS_LOCAL_WRITE, IBV_ACCESS_REMOTE_WRITE, IBV_ACCESS_REMOTE_READ,
		IBV_ACCESS_REMOTE_ATOMIC, IBV_ACCESS_MW_BIND, IBV_ACCESS_ZERO_BASED,
		IBV_ACCESS_ON_DEMAND, IBV_ACCESS_RELAXED_ORDERING,
	};
	int b = pick_buf(1), m, fd, err, i, pinned, revocable = 0;
	__u64 off, len, iova, size = b >= 0 ? bufs[b].size : 8 * PAGE;
	__u32 access = 0;
	struct dmr mr;

	switch (below(20)) {
	case 0:
		fd = expdev;		/* not a dma-buf */
		break;
	case 1:
		fd = -1;
		break;
	case 2:
		fd = 1000 + below(1000);	/* not open */
		break;
	default:
		fd = b >= 0 ? bufs[b].fd : -1;
	}
	if (below(5) < 3) {
		/* Plausible: inside the buffer, IOVA with the offset's page offset. */
		off = below(size);
		len = 1 + below(size - off);
		iova = (off & (PAGE - 1)) + PAGE * below(1 << 20);
		access = below(4) ? IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
				    (below(2) ? IBV_ACCESS_REMOTE_READ : 0) :
				    IBV_ACCESS_LOCAL_WRITE;
	} else {
		/* Around the limits. */
		off = boundary(size);
		len = below(4) ? boundary(size) : below(size - (off < size ? off : 0) + 1);
		iova = below(3) ? (off & (PAGE - 1)) + PAGE * below(1 << 20) : boundary(size);
		for (i = 0; i < 8; i++)
			if (below(3) == 0)
				access |= valid[i];
		if (below(2))
			access |= IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
		if (!below(10))
			access |= 1U << below(32);
	}
	/*
	 * One registration in eight is pinned (rxe's dmabuf_pinned=1, which the
	 * driver reads at registration): the importers' pinned entry points,
	 * and buffers that refuse to migrate while such an MR lives. Half of
	 * those are revocable (dmabuf_revocable=1): pinned until a move or a
	 * revocation of the buffer takes the pages away for good.
	 */
	pinned = !below(8);
	if (pinned)
		revocable = below(2);
	if (pinned)
		write_file(revocable ? RXE_REVOCABLE_PARAM : FUZZ_PINNED_PARAM, "1");
	err = uv_reg_dmabuf_mr(ctx->cmd_fd, pd->handle, off, len, iova, fd, access, &mr);
	if (pinned)
		write_file(revocable ? RXE_REVOCABLE_PARAM : FUZZ_PINNED_PARAM, "0");
	if (err) {
		regs_failed++;
		return err;
	}
	regs_ok++;
	regs_revocable += revocable;
	for (m = 0; m < MAXMR && mrs[m].live; m++)
		;
	/*
	 * No room, a buffer the fuzzer does not track, or one with enough MRs
	 * (each maps the same pages; DMA-API debugging WARNs beyond 7
	 * overlapping mappings of a cacheline): drop it now.
	 */
	if (m == MAXMR || b < 0 || fd != bufs[b].fd || bufs[b].mrs >= MAX_MRS_PER_BUF)
		return uv_dereg_mr(ctx->cmd_fd, &mr) ? 2000 : 0;
	mrs[m] = (struct fmr){ .live = 1, .buf = b, .mr = mr, .off = off, .len = len,
			       .iova = iova, .access = access };
	bufs[b].mrs++;
	return 0;
}

static int op_dereg(void)
{
	int m = pick_mr(), err;

	if (m < 0)
		return -2;
	err = uv_dereg_mr(ctx->cmd_fd, &mrs[m].mr);
	mrs[m].live = 0;
	if (!--bufs[mrs[m].buf].mrs)
		buf_check_clean(mrs[m].buf);
	buf_maybe_free(mrs[m].buf);
	return err;
}

/*
 * Revokes buffer @fd, or restores it, as vfio-pci does around a reset;
 * 6000 + the mappings the revocation waited for, or an errno. A revocation
 * must leave no pin and no mapping: a revocable pinned MR gives its pin
 * back, a dynamic one cannot map the buffer again until it is restored.
 */
static int op_revoke(int fd)
{
	struct dmabuf_exp_revoke rv;
	struct dmabuf_exp_stats st;
	int restore = !below(3), err = exp_revoke_fd(expdev, fd, restore, &rv);

	if (err)
		return err;
	if (!restore) {
		revocations++;
		st = exp_stats_fd(expdev, fd);
		if ((st.pins || st.mappings) && revocations_incomplete++ < 3)
			printf("    # revoked buffer fd %d: %llu pinned, %llu mapped\n", fd,
			       (unsigned long long)st.pins, (unsigned long long)st.mappings);
	}
	return 6000 + (int)rv.unmapped;
}

static int op_migrate(void)
{
	int b = pick_buf(1), fd = b >= 0 ? bufs[b].fd : -1;
	__u32 flags = 0;

	/* One in four is a revocation or a restore instead. */
	if (!below(4))
		return op_revoke(fd);

	if (!below(10))
		fd = below(2) ? expdev : 1000 + (int)below(100);
	if (!below(12))
		flags = 1U << (1 + below(31));	/* unknown (not FAIL_MAPS) */
	return exp_migrate_fd(expdev, fd, below(3), flags);
}

static int op_stats(void)
{
	struct dmabuf_exp_stats s = { .version = DMABUF_EXP_VERSION };
	int b = pick_buf(1);

	s.fd = b >= 0 && below(5) ? bufs[b].fd : (int)below(2000) - 2;
	if (!below(20))
		s.version = below(5);
	if (ioctl(expdev, DMABUF_EXP_IOC_STATS, &s))
		return errno;
	/* Live attachments: one per MR on the buffer, whichever importer. */
	return 3000 + (int)s.attachments * 10 + (int)s.pins;
}

static int op_close(void)
{
	int b = pick_buf(1);

	if (b < 0)
		return -2;
	close(bufs[b].fd);
	bufs[b].fd = -1;
	buf_maybe_free(b);
	return 0;
}

static int op_mmap(void)
{
	int b = pick_buf(1);
	__u64 off, len;
	void *p;
	int r;

	if (b < 0)
		return -2;
	off = PAGE * below(bufs[b].size / PAGE + 2);
	len = 1 + below(bufs[b].size + PAGE);
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, bufs[b].fd, off);
	if (p == MAP_FAILED)
		return errno;
	/* The same page as through the buffer's own mapping. */
	r = off < bufs[b].size && memcmp(p, bufs[b].map + off, 1) ? 4000 : 0;
	munmap(p, len);
	return r;
}

static int op_write(unsigned long opno)
{
	int m = pick_mr(), st;
	struct fmr *r;
	__u64 delta, len;
	unsigned char *dst;

	if (m < 0)
		return -2;
	r = &mrs[m];
	if (!(r->access & IBV_ACCESS_REMOTE_WRITE) || (r->access & IBV_ACCESS_ZERO_BASED) ||
	    r->len == 0 || r->off + r->len > bufs[r->buf].size)
		return -3;
	len = 1 + below(r->len < HOST_SIZE ? r->len : HOST_SIZE);
	delta = below(r->len - len + 1);
	fill(host, len, opno);
	st = write_to(r->iova + delta, r->mr.rkey, len);
	if (st == IBV_WC_SUCCESS) {
		writes_ok++;
		dst = bufs[r->buf].map + r->off + delta;
		if (memcmp(dst, host, len)) {
			if (corruptions++ < 3)
				printf("    # op %lu: %llu bytes at %llu differ after a WRITE\n",
				       opno, (unsigned long long)len,
				       (unsigned long long)(r->off + delta));
		}
	} else {
		/* The QPs are in the error state now: a new pair. */
		if (connect_pair())
			return 5000;
	}
	return st;
}

/*
 * Runs up to @ops operations (fewer when an input ends); @tag prefixes their
 * outcomes. Returns how many ran.
 */
static unsigned long fuzz_ops(unsigned long ops, const char *tag)
{
	static const unsigned int weight[OP_N] = { 10, 3, 35, 12, 10, 5, 4, 5, 16, 3, 3 };
	unsigned long i;
	unsigned int w, total = 0, o;
	int r;

	for (o = 0; o < OP_N; o++)
		total += weight[o];
	for (i = 0; i < ops && (!input || input_left()); i++) {
		w = below(total);
		for (o = 0; w >= weight[o]; o++)
			w -= weight[o];
		switch (o) {
		case OP_CREATE:
			r = op_create();
			break;
		case OP_UDMABUF:
			r = op_udmabuf();
			break;
		case OP_REG:
			r = op_reg();
			break;
		case OP_DEREG:
			r = op_dereg();
			break;
		case OP_MIGRATE:
			r = op_migrate();
			break;
		case OP_STATS:
			r = op_stats();
			break;
		case OP_CLOSE:
			r = op_close();
			break;
		case OP_MMAP:
			r = op_mmap();
			break;
		case OP_HEAP:
		case OP_VGEM:
			r = op_foreign(o == OP_VGEM);
			break;
		default:
			r = op_write(i);
			break;
		}
		op_count[o]++;
		/* Not errors: STATS' counts (3000 + ...), a revocation's (6000 + ...). */
		if (r && r != -2 && r != -3 && !(o == OP_STATS && r >= 3000) &&
		    !(o == OP_MIGRATE && r >= 6000))
			op_errors[o]++;
		outcome("%s%lu %s %d", tag, i, op_names[o], r);
		if (!input && i % 500 == 499) {
			char what[80];

			snprintf(what, sizeof(what), "fuzzer at %lu of %lu operations", i + 1, ops);
			ktap_progress(what);
		}
	}
	return i;
}

/* Deregisters every MR and closes every buffer the operations left. */
static void fuzz_release(void)
{
	int b, m;

	for (m = 0; m < MAXMR; m++)
		if (mrs[m].live) {
			uv_dereg_mr(ctx->cmd_fd, &mrs[m].mr);
			mrs[m].live = 0;
			bufs[mrs[m].buf].mrs--;
		}
	for (b = 0; b < MAXBUF; b++)
		if (bufs[b].used) {
			buf_check_clean(b);
			if (bufs[b].fd >= 0)
				close(bufs[b].fd);
			bufs[b].fd = -1;
			buf_maybe_free(b);
		}
}

static void fuzz_counts(void)
{
	unsigned int o;

	for (o = 0; o < OP_N; o++)
		printf("    # %s: %lu ops, %lu errors\n", op_names[o], op_count[o], op_errors[o]);
	printf("    # %lu registrations succeeded (%lu revocable), %lu refused\n", regs_ok,
	       regs_revocable, regs_failed);
	printf("    # %lu WRITEs checked; %lu revocations\n", writes_ok, revocations);
}

static void fuzz(unsigned long long seed, unsigned long ops)
{
	unsigned long done;

	/* dynamic unless a choice says */
	write_file(FUZZ_PINNED_PARAM, "0");
	write_file(RXE_REVOCABLE_PARAM, "0");
	rng_state = seed ? seed : 1;
	vgem_dev = vgem_open();
	done = fuzz_ops(ops, "");
	fuzz_counts();
	result(done == ops, "ran_%lu_operations (seed %llu)", ops, seed);
	/* A generator that only fails, or never does, tests little. */
	result(regs_ok > ops / 20 && regs_failed > ops / 20 && writes_ok > ops / 50,
	       "outcomes_varied (%lu registered, %lu refused, %lu WRITEs)", regs_ok,
	       regs_failed, writes_ok);
	result(corruptions == 0, "no_data_corruption (%lu WRITEs checked)", writes_ok);
	fuzz_release();
	result(!bufs_dirty, "buffers_clean_after_deregistration (%lu of %lu dirty)", bufs_dirty,
	       bufs_checked);
	result(!revocations_incomplete, "revocations_leave_nothing_mapped (%lu of %lu did not)",
	       revocations_incomplete, revocations);
	if (vgem_dev >= 0)
		close(vgem_dev);
	vgem_dev = -1;
}

/* The bytes of the file @path (at most @max), in a new buffer; NULL on error. */
static unsigned char *read_input(const char *path, size_t max, size_t *len)
{
	unsigned char *buf = malloc(max);
	FILE *f = fopen(path, "rb");

	if (!buf || !f) {
		free(buf);
		if (f)
			fclose(f);
		return NULL;
	}
	*len = fread(buf, 1, max, f);
	fclose(f);
	return buf;
}

/* The distinct kernel program counters seen (--pcs), an open-addressed set. */
#define PCSET 0x20000UL
static unsigned long *pcset;
static unsigned long pcs_seen, kcov_recorded;

static void pcs_add(unsigned long n)
{
	unsigned long i, pc, h;

	for (i = 0; pcset && i < n; i++) {
		pc = kcov_pc(i);
		for (h = kcov_mix(pc) & (PCSET - 1); pcset[h] && pcset[h] != pc;
		     h = (h + 1) & (PCSET - 1))
			;
		if (!pcset[h] && pcs_seen < PCSET / 2) {
			pcset[h] = pc;
			pcs_seen++;
		}
	}
}

/* Writes the set to @path, one hexadecimal program counter a line. */
static int pcs_write(const char *path)
{
	FILE *f = fopen(path, "w");
	unsigned long h;

	if (!f)
		return 0;
	for (h = 0; h < PCSET; h++)
		if (pcset[h])
			fprintf(f, "0x%lx\n", pcset[h]);
	return !fclose(f);
}

/*
 * Mode replay: each file of @paths (the fuzzer's corpus, or a reproducer it
 * saved) as the choices of one sequence of operations, from a clean state;
 * the outcomes carry the file's name, so that --save and --compare hold
 * every input to the same result on both importers.
 */
static void replay(char **paths, int n)
{
	unsigned long ops = 0;
	int i, read = 0;
	size_t len;

	/* dynamic unless a choice says */
	write_file(FUZZ_PINNED_PARAM, "0");
	write_file(RXE_REVOCABLE_PARAM, "0");
	vgem_dev = vgem_open();
	for (i = 0; i < n; i++) {
		unsigned char *data = read_input(paths[i], INPUT_MAX, &len);
		const char *name = strrchr(paths[i], '/');
		char tag[80];

		if (!data) {
			printf("    # %s: %s\n", paths[i], strerror(errno));
			continue;
		}
		read++;
		snprintf(tag, sizeof(tag), "%s ", name ? name + 1 : paths[i]);
		input = data;
		input_len = len;
		input_pos = 0;
		kcov_start();
		ops += fuzz_ops(INPUT_OPS, tag);
		kcov_recorded = kcov_stop();
		pcs_add(kcov_recorded);
		input = NULL;
		free(data);
		fuzz_release();
	}
	if (vgem_dev >= 0)
		close(vgem_dev);
	vgem_dev = -1;
	fuzz_counts();
	result(n > 0 && read == n, "replayed_inputs (%d of %d, %lu operations)", read, n, ops);
	result(corruptions == 0, "no_data_corruption (%lu WRITEs checked)", writes_ok);
	result(!bufs_dirty, "buffers_clean_after_deregistration (%lu of %lu dirty)", bufs_dirty,
	       bufs_checked);
	result(!revocations_incomplete, "revocations_leave_nothing_mapped (%lu of %lu did not)",
	       revocations_incomplete, revocations);
}

/*
 * Mode afl FILE (make fuzz, run by AFL++ once per input): FILE replayed as
 * mode replay does, with the kernel's coverage of its operations (KCOV, this
 * thread) counted in AFL++'s map. Mode replay with --pcs OUT instead writes
 * the distinct program counters of all its inputs to OUT (make fuzz's
 * coverage table). Either fails when the kernel has no KCOV.
 */
static void covered(char **paths, int n, int afl, const char *pcs)
{
	int opened = !kcov_open();

	result(opened, "kcov_opened");
	if (!opened)
		return;
	if (pcs)
		pcset = calloc(PCSET, sizeof(*pcset));
	replay(paths, n);
	/* Outside AFL++, the checks alone: whether a reproducer still crashes. */
	if (afl && getenv("__AFL_SHM_ID"))
		result(!kcov_to_afl(kcov_recorded), "afl_map_filled (%lu program counters)",
		       kcov_recorded);
	else if (afl)
		printf("    # not run by AFL++: its map not filled\n");
	if (pcs)
		result(pcset && pcs_write(pcs), "program_counters_written (%lu, %s)", pcs_seen,
		       pcs);
}

/* ---- storm ----------------------------------------------------------- */

#define STORM_WORKERS 3
#define NERR 140

struct storm_shared {
	unsigned long regs, deregs, private_bufs, foreign_bufs, kills, migrations, rmmod_refused;
	unsigned long writes, corrupt;
	unsigned long errs[NERR];
	int rmmod_succeeded, stop;
};

static struct storm_shared *sh;
static int shared_fd[2];
static size_t shared_size = 16 * PAGE;

static void count_err(int err)
{
	__atomic_add_fetch(&sh->errs[err > 0 && err < NERR ? err : 0], 1, __ATOMIC_RELAXED);
}

/*
 * A private buffer of 8 pages for a storm worker: the exporter's, or with
 * @mixed one of the exporter, the system heap and vgem (@vgem, with the GEM
 * handle closed at once); its fd, or -1 with *err set.
 */
static int storm_private(int mixed, int vgem, int *err)
{
	__u32 handle;
	int fd;

	switch (mixed ? below(3) : 0) {
	case 1:
		fd = heap_alloc(8 * PAGE, err);
		break;
	case 2:
		fd = vgem < 0 ? -1 : vgem_alloc(vgem, 8 * PAGE, &handle, err);
		if (vgem < 0)
			*err = ENODEV;
		else if (fd >= 0 && vgem_close_handle(vgem, handle))
			*err = EBADF;
		break;
	default:
		return exp_create_chunks(expdev, 8 * PAGE, DMABUF_EXP_F_DYNAMIC, NULL, 0, err);
	}
	if (fd >= 0)
		__atomic_add_fetch(&sh->foreign_bufs, 1, __ATOMIC_RELAXED);
	return fd;
}

/*
 * A worker: its own device context; registers until killed or stopped,
 * holding half of its MRs for up to 2 ms if @pause. Its private buffers
 * are the exporter's; with @pause (the storm, not its benchmark) also the
 * system heap's and vgem's.
 */
static void storm_worker(const char *dev, unsigned int seed, int pause)
{
	struct ibv_context *c;
	struct ibv_pd *p;
	int err = 0, fd, vgem = pause ? vgem_open() : -1;
	struct dmr mr;

	rng_state = seed;
	c = open_device_named(dev);
	p = c ? ibv_alloc_pd(c) : NULL;
	if (!p)
		_exit(1);
	while (!sh->stop) {
		int private = below(3) == 0;
		__u64 off = PAGE * below(5);	/* 4 pages from there fit */

		fd = private ? storm_private(pause, vgem, &err) : shared_fd[below(2)];
		if (fd < 0) {
			count_err(err);
			continue;
		}
		err = uv_reg_dmabuf_mr(c->cmd_fd, p->handle, off, 4 * PAGE, 0x100000 + off, fd,
				       IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE, &mr);
		count_err(err);
		if (!err) {
			__atomic_add_fetch(&sh->regs, 1, __ATOMIC_RELAXED);
			if (pause && below(2))
				usleep(below(2000));
			err = uv_dereg_mr(c->cmd_fd, &mr);
			count_err(err);
			if (!err)
				__atomic_add_fetch(&sh->deregs, 1, __ATOMIC_RELAXED);
		}
		if (private) {
			__atomic_add_fetch(&sh->private_bufs, 1, __ATOMIC_RELAXED);
			close(fd);
		}
	}
	_exit(0);
}

static void *storm_migrator(void *arg)
{
	(void)arg;
	while (!sh->stop) {
		if (!exp_migrate_fd(expdev, shared_fd[below(2)], below(2), 0))
			sh->migrations++;
		usleep(1000);
	}
	return NULL;
}

static void *storm_rmmod(void *arg)
{
	(void)arg;
	while (!sh->stop) {
		if (syscall(SYS_delete_module, "umem_dmabuf_rs", O_NONBLOCK) == 0) {
			sh->rmmod_succeeded = 1;
			break;
		}
		sh->rmmod_refused++;
		usleep(50000);
	}
	return NULL;
}

/* What a storm must have done to count as one (storm_ran). */
static int storm_enough(void)
{
	return sh->regs > 20 && sh->kills > 2 && sh->migrations > 20 && sh->foreign_bufs > 0;
}

static void storm(const char *dev, int secs)
{
	const __u32 acc = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
	pid_t pids[STORM_WORKERS];
	pthread_t mig, rm;
	unsigned char *map;
	struct dmr anchor, target;
	int i, err, refs, rust = !strcmp(importer, "rust"), ok;
	time_t end;

	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	for (i = 0; i < 2; i++)
		shared_fd[i] = exp_create_chunks(expdev, shared_size, DMABUF_EXP_F_DYNAMIC,
						 NULL, 0, &err);
	map = shared_fd[1] >= 0 ? mmap(NULL, shared_size, PROT_READ | PROT_WRITE, MAP_SHARED,
				       shared_fd[1], 0) : MAP_FAILED;
	ok = sh != MAP_FAILED && shared_fd[0] >= 0 && map != MAP_FAILED &&
	     !uv_reg_dmabuf_mr(ctx->cmd_fd, pd->handle, 0, shared_size, 0x800000,
			       shared_fd[0], acc, &anchor) &&
	     !uv_reg_dmabuf_mr(ctx->cmd_fd, pd->handle, 0, shared_size, 0x900000,
			       shared_fd[1], acc, &target);
	result(ok, "storm_buffers_and_mrs");
	if (!ok)
		return;
	refs = module_refs();
	for (i = 0; i < STORM_WORKERS; i++) {
		pids[i] = fork();
		if (!pids[i])
			storm_worker(dev, 1000 + i, 1);
	}
	pthread_create(&mig, NULL, storm_migrator, NULL);
	if (rust)
		pthread_create(&rm, NULL, storm_rmmod, NULL);
	srand(7);
	end = time(NULL) + secs;
	/*
	 * At least @secs, and on until the storm did what storm_ran asks of
	 * it: on a slow or loaded host @secs alone may not hold two kills.
	 * Thirty times @secs more at most, so that a storm that cannot get
	 * there still ends (and fails storm_ran).
	 */
	for (i = 0; time(NULL) < end || (!storm_enough() && time(NULL) < end + 30 * secs); i++) {
		/* Verified traffic into the migrating target... */
		__u32 len = 1 + rand() % (4 * PAGE);
		__u64 off = rand() % (shared_size - len);
		int st;

		fill(host, len, i);
		st = write_to(0x900000 + off, target.rkey, len);
		if (st == IBV_WC_SUCCESS) {
			sh->writes++;
			if (memcmp(map + off, host, len))
				sh->corrupt++;
		} else {
			printf("    # WRITE completion %d\n", st);
			sh->corrupt++;
			connect_pair();
		}
		/* ...and now and then a worker killed wherever it is. */
		if (i % 8 == 7) {
			int w = rand() % STORM_WORKERS;

			kill(pids[w], SIGKILL);
			waitpid(pids[w], NULL, 0);
			sh->kills++;
			pids[w] = fork();
			if (!pids[w])
				storm_worker(dev, 2000 + i, 1);
		}
	}
	sh->stop = 1;
	for (i = 0; i < STORM_WORKERS; i++)
		waitpid(pids[i], NULL, 0);
	pthread_join(mig, NULL);
	if (rust)
		pthread_join(rm, NULL);
	printf("    # %lu registrations, %lu deregistrations, %lu private buffers (%lu %s)\n",
	       sh->regs, sh->deregs, sh->private_bufs, sh->foreign_bufs,
	       "of the heap and vgem");
	printf("    # %lu workers killed, %lu migrations, %lu WRITEs checked, %lu rmmods refused\n",
	       sh->kills, sh->migrations, sh->writes, sh->rmmod_refused);
	for (i = 0; i < NERR; i++)
		if (sh->errs[i])
			printf("    # errno %d (%s): %lu\n", i, i ? strerror(i) : "success",
			       sh->errs[i]);
	result(storm_enough(),
	       "storm_ran (%lu registrations, %lu kills, %lu migrations, %lu heap and vgem buffers)",
	       sh->regs, sh->kills, sh->migrations, sh->foreign_bufs);
	err = 0;
	for (i = 1; i < NERR; i++)
		err += sh->errs[i];
	result(err == 0, "no_failed_registration_or_deregistration (%d)", err);
	result(sh->corrupt == 0 && sh->writes > 0, "no_data_corruption (%lu WRITEs)", sh->writes);
	if (rust)
		result(!sh->rmmod_succeeded && sh->rmmod_refused > 0,
		       "rmmod_refused_while_mrs_live (%lu attempts)", sh->rmmod_refused);
	result(!uv_dereg_mr(ctx->cmd_fd, &anchor) && !uv_dereg_mr(ctx->cmd_fd, &target),
	       "dereg_storm_mrs");
	result(!exp_stats_fd(expdev, shared_fd[0]).attachments &&
	       !exp_stats_fd(expdev, shared_fd[1]).attachments,
	       "shared_buffers_have_no_attachment_left");
	result(refs < 0 || module_refs() == refs - 2,
	       "module_references_of_killed_workers_dropped");
	munmap(map, shared_size);
	close(shared_fd[0]);
	close(shared_fd[1]);
}

/* ---- stormbench ---------------------------------------------------- */

/*
 * One block of make bench's concurrent registration storm: @workers
 * processes register and deregister dynamic MRs (4 pages of one of two
 * shared buffers, or of a buffer of their own one time in three) as fast
 * as they can for @secs seconds, while a thread migrates the shared
 * buffers every millisecond and this thread WRITEs into an MR of one of
 * them. Prints "BENCH storm_reg_dereg <workers> <importer> <round> <ns>",
 * ns being the wall time per completed registration and deregistration
 * of all workers together (scripts/bench_report.py), and fails on any
 * failed registration, deregistration or WRITE.
 */
static void stormbench(const char *dev, int workers, int secs, unsigned int round)
{
	const __u32 acc = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
	pid_t pids[16];
	pthread_t mig;
	struct dmr target;
	int i, err, n = 0, failed = 0, writes = 0;
	double t;
	time_t end;

	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	for (i = 0; i < 2; i++)
		shared_fd[i] = exp_create_chunks(expdev, shared_size, DMABUF_EXP_F_DYNAMIC,
						 NULL, 0, &err);
	if (sh == MAP_FAILED || workers < 1 || workers > 16 || secs < 1 || shared_fd[0] < 0 ||
	    shared_fd[1] < 0 ||
	    uv_reg_dmabuf_mr(ctx->cmd_fd, pd->handle, 0, shared_size, 0x900000, shared_fd[1],
			     acc, &target)) {
		result(0, "stormbench_setup (%d workers, %d s)", workers, secs);
		return;
	}
	t = now_ns();
	for (; n < workers; n++) {
		pids[n] = fork();
		if (!pids[n])
			storm_worker(dev, 3000 + n, 0);
	}
	pthread_create(&mig, NULL, storm_migrator, NULL);
	end = time(NULL) + secs;
	while (time(NULL) < end) {
		if (write_to(0x900000, target.rkey, 8) == IBV_WC_SUCCESS)
			writes++;
		else
			failed++;
	}
	sh->stop = 1;
	for (i = 0; i < n; i++)
		waitpid(pids[i], NULL, 0);
	t = now_ns() - t;
	pthread_join(mig, NULL);
	for (i = 1; i < NERR; i++)
		failed += sh->errs[i];
	if (!failed && sh->regs && sh->regs == sh->deregs)
		printf("    # BENCH storm_reg_dereg %d %s %u %.0f\n", workers, importer, round,
		       t / sh->regs);
	result(!failed && sh->regs > 0 && sh->regs == sh->deregs && writes > 0,
	       "storm_reg_dereg_%d_workers (%lu registrations, %lu migrations, %d WRITEs, %d failed)",
	       workers, sh->regs, sh->migrations, writes, failed);
	uv_dereg_mr(ctx->cmd_fd, &target);
	close(shared_fd[0]);
	close(shared_fd[1]);
	munmap(sh, sizeof(*sh));
}

/* ---- regbench ------------------------------------------------------ */

/*
 * The invalidate and re-map round trip, @iters times on a dynamic MR over
 * the whole buffer @fd of @pages pages: a migration (move_notify: rxe drops
 * its page list, the importer unmaps), then an 8-byte RDMA WRITE, which
 * makes rxe re-map (map_pages, waiting for the copy's fence). Returns the ns
 * per round trip, or 0 on a failure.
 */
static double remap_rounds(int fd, unsigned int pages, unsigned int iters)
{
	const __u32 access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
	unsigned int i;
	struct dmr mr;
	double t = 0;

	if (uv_reg_dmabuf_mr(ctx->cmd_fd, pd->handle, 0, (__u64)pages * PAGE, 0x100000, fd,
			     access, &mr))
		return 0;
	if (write_to(0x100000, mr.rkey, 8) == IBV_WC_SUCCESS) {
		t = now_ns();
		for (i = 0; i < iters; i++)
			if (exp_migrate_fd(expdev, fd, 0, 0) ||
			    write_to(0x100000, mr.rkey, 8) != IBV_WC_SUCCESS)
				break;
		t = i == iters ? (now_ns() - t) / iters : 0;
	}
	uv_dereg_mr(ctx->cmd_fd, &mr);
	return t;
}

/*
 * One block of make bench's uverbs benchmarks on an exporter buffer of
 * @pages one-page entries, @iters times: @kind 0, REG_DMABUF_MR + dereg of
 * a dynamic MR over the whole buffer; 1, the same pinned (rxe's
 * dmabuf_pinned=1, which pins and maps at registration); 2, the invalidate
 * and re-map round trip (remap_rounds()). Prints "BENCH <name> <pages>
 * <importer> <round> <ns>", the format of the in-kernel benchmark
 * (scripts/bench_report.py).
 */
static void regbench(unsigned int pages, unsigned int iters, int kind, unsigned int round)
{
	static const char *const names[] = { "reg_dereg_dynamic", "reg_dereg_pinned",
					     "migrate_remap_write" };
	int pinned = kind == 1;
	const char *param = "/sys/module/rdma_rxe/parameters/dmabuf_pinned";
	const __u32 access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
	unsigned int i, done = 0;
	int fd, err = 0;
	struct dmr mr;
	double t;

	fd = exp_create_chunks(expdev, (__u64)pages * PAGE, DMABUF_EXP_F_DYNAMIC, NULL, 0, &err);
	if (fd < 0 || kind < 0 || kind > 2 || write_file(param, pinned ? "1" : "0")) {
		result(0, "benchmark buffer of %u pages (errno %d)", pages, err);
		return;
	}
	if (kind == 2) {
		t = remap_rounds(fd, pages, iters);
		done = t > 0 ? iters : 0;
		goto report;
	}
	t = now_ns();
	for (i = 0; i < iters; i++) {
		err = uv_reg_dmabuf_mr(ctx->cmd_fd, pd->handle, 0, (__u64)pages * PAGE, 0x100000,
				       fd, access, &mr);
		if (err || uv_dereg_mr(ctx->cmd_fd, &mr))
			break;
		done++;
	}
	t = (now_ns() - t) / iters;
report:
	write_file(param, "0");
	close(fd);
	if (done == iters)
		printf("    # BENCH %s %u %s %u %.0f\n", names[kind], pages, importer, round, t);
	result(done == iters, "%s_%u_pages (%u of %u, errno %d)", names[kind], pages, done,
	       iters, err);
}

int main(int argc, char **argv)
{
	const char *save = NULL, *compare = NULL, *recorded = NULL, *pcs = NULL, *mode;
	int klog = -1, rc;
	char suite[64];
	int i, refs, inputs = 0;

	if (argc < 5)
		return 2;
	gidx = atoi(argv[2]);
	importer = argv[3];
	mode = argv[4];
	while (5 + inputs < argc && strncmp(argv[5 + inputs], "--", 2))
		inputs++;
	for (i = 5; i < argc; i++) {
		if (!strcmp(argv[i], "--save") && i + 1 < argc)
			save = argv[++i];
		else if (!strcmp(argv[i], "--compare") && i + 1 < argc)
			compare = argv[++i];
		else if (!strcmp(argv[i], "--record") && i + 1 < argc)
			recorded = argv[++i];
		else if (!strcmp(argv[i], "--pcs") && i + 1 < argc)
			pcs = argv[++i];
	}
	snprintf(suite, sizeof(suite), "%s_%s",
		 !strcmp(mode, "faults") ? "fault_injection_uverbs" : mode, importer);
	ktap_on_term(suite);
	setvbuf(stdout, NULL, _IOLBF, 0);
	expdev = -1;
	result(!setup(argv[1]), "open_%s_pd_cq_qps", argv[1]);
	if (!qa)
		return ktap_report(suite);
	outlog = (save || compare) ? calloc(1, MAXOPS_LOG + 1) : NULL;
	refs = module_refs();
	if (!strcmp(mode, "afl"))
		klog = klog_open();
	if (recorded)
		record = fopen(recorded, "wb");
	if (!strcmp(mode, "faults"))
		faults();
	else if (!strcmp(mode, "fuzz") && argc > 6)
		fuzz(strtoull(argv[5], NULL, 0), strtoul(argv[6], NULL, 0));
	else if (!strcmp(mode, "replay") && argc > 5 && pcs)
		covered(argv + 5, inputs, 0, pcs);
	else if (!strcmp(mode, "replay") && argc > 5)
		replay(argv + 5, inputs);
	else if (!strcmp(mode, "afl") && inputs == 1)
		covered(argv + 5, 1, 1, NULL);
	else if (!strcmp(mode, "storm") && argc > 5)
		storm(argv[1], atoi(argv[5]));
	else if (!strcmp(mode, "stormbench") && argc > 7)
		stormbench(argv[1], atoi(argv[5]), atoi(argv[6]), atoi(argv[7]));
	else if (!strcmp(mode, "regbench") && argc > 8)
		regbench(atoi(argv[5]), atoi(argv[6]), atoi(argv[7]), atoi(argv[8]));
	else
		result(0, "known_mode %s", mode);
	if (outlog)
		result(outcomes_match(save, compare), save ? "outcomes_saved %s" :
		       "same_outcomes_as %s", save ? save : compare);
	if (recorded)
		result(record && !fclose(record), "choices_recorded %s", recorded);
	teardown();
	expect_nothing_left(refs);
	rc = ktap_report(suite);
	/*
	 * AFL++ keeps the inputs of programs killed by a signal: a failed
	 * check or a kernel report is made one.
	 */
	if (!strcmp(mode, "afl") && (klog_reported(klog) || rc))
		abort();
	return rc;
}
