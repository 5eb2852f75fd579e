// SPDX-License-Identifier: GPL-2.0
/*
 * C shim of umem_dmabuf_rs.ko: its module parameters and its debugfs file,
 * kept in C. The module, its ops table and its registration with ib_core are
 * Rust's (umem_rs.rs); its init calls umem_shim_init() after
 * registering.
 *
 * - module parameters; a build with its KUnit suites (UMEM_KUNIT, set by
 *   the Makefile) has two more, "kunit": a load runs the suites only when
 *   asked to, and "provoke_warning", for the test runner's own check;
 * - the debugfs file <debugfs>/umem_dmabuf_rs/calls: how many times ib_core
 *   reached each Rust entry point while the parameter count_calls was set
 *   (counted by the module, umem_rs_calls()).
 */
#include <linux/bug.h>
#include <linux/debugfs.h>
#include <linux/jump_label.h>
#include <linux/kstrtox.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/sysfs.h>
#include <rdma/ib_umem.h>
#include <rdma/ib_verbs.h>

#include "umem_dmabuf_rs.h"

MODULE_IMPORT_NS("DMA_BUF");

#ifdef UMEM_KUNIT
static bool provoke_warning;
module_param(provoke_warning, bool, 0444);
MODULE_PARM_DESC(provoke_warning,
		 "Debug: emit a kernel WARNING at load, to prove the test runner catches it");

static bool run_kunit;
module_param_named(kunit, run_kunit, bool, 0444);
MODULE_PARM_DESC(kunit,
		 "Run the module's KUnit suites at load (default: no; a production load runs none)");
#endif

static bool register_importer = true;
module_param_named(register, register_importer, bool, 0444);
MODULE_PARM_DESC(register,
		 "Register the Rust importer with ib_core at load (default: yes)");

/*
 * Whether the Rust entry points count their calls (the parameter
 * "count_calls"): a static key, so that while counting is off, the default,
 * an entry point executes a no-op where the C importer has nothing, not an
 * atomic increment (a few percent of a one-entry registration). The entry
 * points test it in Rust (abs::shim::counting()); the counts are Rust's
 * (umem_rs_calls()).
 * Module parameters are parsed after the module's jump labels are set up,
 * so count_calls=1 at load works too.
 */
DEFINE_STATIC_KEY_FALSE(umem_rs_counting_key);

void umem_rs_set_counting(bool on)
{
	if (on)
		static_branch_enable(&umem_rs_counting_key);
	else
		static_branch_disable(&umem_rs_counting_key);
}

bool umem_rs_counting(void)
{
	return static_key_enabled(&umem_rs_counting_key);
}

static int count_calls_set(const char *val, const struct kernel_param *kp)
{
	bool on;
	int ret = kstrtobool(val, &on);

	if (ret)
		return ret;
	umem_rs_set_counting(on);
	return 0;
}

static int count_calls_get(char *buffer, const struct kernel_param *kp)
{
	return sysfs_emit(buffer, "%c\n", umem_rs_counting() ? 'Y' : 'N');
}

static const struct kernel_param_ops count_calls_ops = {
	.set = count_calls_set,
	.get = count_calls_get,
};
module_param_cb(count_calls, &count_calls_ops, NULL, 0644);
MODULE_PARM_DESC(count_calls,
		 "Count the calls of each entry point in <debugfs>/umem_dmabuf_rs/calls (default: no)");

static struct dentry *umem_shim_debugfs;

static int calls_show(struct seq_file *m, void *v)
{
	const char *name;
	u32 i;

	for (i = 0; (name = umem_rs_entry_name(i)); i++)
		seq_printf(m, "%s %llu\n", name, umem_rs_calls(i));
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(calls);

/*
 * The module parameter "register". The Rust module init fails unless the
 * registration it asks for succeeds, so while the module is loaded this also
 * says whether the Rust importer was registered at load.
 */
bool umem_shim_is_registered(void)
{
	return register_importer;
}

/*
 * kzalloc() of a constant size, as the C importer's: the slab cache is
 * picked at compile time, where Rust, calling __kmalloc_noprof(), has the
 * allocator look it up by size on every registration.
 */
struct ib_umem_dmabuf *umem_shim_alloc_umem(void)
{
	return kzalloc(sizeof(struct ib_umem_dmabuf), GFP_KERNEL);
}

void umem_shim_init(void)
{
#ifdef UMEM_KUNIT
	/*
	 * KUnit runs a module's suites when the module goes live, after its
	 * init: with none left in the module's list, a load without kunit=1
	 * runs no test (and its test cases could not disturb a real device).
	 */
	if (!run_kunit) {
		THIS_MODULE->num_kunit_suites = 0;
		THIS_MODULE->num_kunit_init_suites = 0;
	}
	WARN(provoke_warning, "umem_dmabuf_rs: WARNING provoked on purpose (provoke_warning=1)\n");
#endif
	umem_shim_debugfs = debugfs_create_dir("umem_dmabuf_rs", NULL);
	debugfs_create_file("calls", 0444, umem_shim_debugfs, NULL, &calls_fops);
}

void umem_shim_exit(void)
{
	debugfs_remove_recursive(umem_shim_debugfs);
}
