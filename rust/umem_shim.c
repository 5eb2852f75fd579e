// SPDX-License-Identifier: GPL-2.0
/*
 * C shim of umem_dmabuf_rs.ko: what C has to own. The module init itself is
 * Rust's (module! in rust/umem_rs.rs); it calls umem_shim_init() first.
 *
 * - the struct ib_umem_dmabuf_ops table, whose callbacks are the Rust entry
 *   points (rust/abs/umem.rs, umem_importer_ffi!), and its registration with
 *   ib_core;
 * - the debugfs file <debugfs>/umem_dmabuf_rs/calls: how many times ib_core
 *   reached each Rust entry point;
 * - module parameters.
 */
#include <linux/bug.h>
#include <linux/debugfs.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/seq_file.h>
#include <rdma/ib_umem.h>
#include <rdma/ib_verbs.h>

#include "umem_dmabuf_rs.h"

MODULE_IMPORT_NS(DMA_BUF);

static bool provoke_warning;
module_param(provoke_warning, bool, 0444);
MODULE_PARM_DESC(provoke_warning,
		 "Debug: emit a kernel WARNING at load, to prove the test runner catches it");

static bool register_importer = true;
module_param_named(register, register_importer, bool, 0444);
MODULE_PARM_DESC(register,
		 "Register the Rust importer with ib_core at load (default: yes)");

const struct ib_umem_dmabuf_ops umem_rs_ops = {
	.owner = THIS_MODULE,
	.get = umem_rs_get,
	.get_pinned = umem_rs_get_pinned,
	.get_pinned_revocable_and_lock = umem_rs_get_pinned_revocable_and_lock,
	.set_revoke_locked = umem_rs_set_revoke_locked,
	.map_pages = umem_rs_map_pages,
	.unmap_pages = umem_rs_unmap_pages,
	.revoke_lock = umem_rs_revoke_lock,
	.revoke_unlock = umem_rs_revoke_unlock,
	.revoke = umem_rs_revoke,
	.release = umem_rs_release,
};

/* In the order of enum Entry in rust/abs/umem.rs. */
static const char * const umem_rs_entry_names[] = {
	"get", "get_pinned", "get_pinned_revocable_and_lock",
	"set_revoke_locked", "map_pages", "unmap_pages", "revoke_lock",
	"revoke_unlock", "revoke", "release",
};

static struct dentry *umem_shim_debugfs;
static bool umem_shim_registered;

static int calls_show(struct seq_file *m, void *v)
{
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(umem_rs_entry_names); i++)
		seq_printf(m, "%s %llu\n", umem_rs_entry_names[i],
			   umem_rs_calls(i));
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(calls);

bool umem_shim_is_registered(void)
{
	return umem_shim_registered;
}

void umem_shim_warn_pinned_move(struct ib_device *device)
{
	ibdev_warn_ratelimited(device,
			       "Invalidate callback should not be called when memory is pinned\n");
}

int umem_shim_init(void)
{
	int ret;

	WARN(provoke_warning, "umem_dmabuf_rs: WARNING provoked on purpose (provoke_warning=1)\n");
	umem_shim_debugfs = debugfs_create_dir("umem_dmabuf_rs", NULL);
	debugfs_create_file("calls", 0444, umem_shim_debugfs, NULL, &calls_fops);
	if (register_importer) {
		ret = ib_umem_dmabuf_register_ops(&umem_rs_ops);
		if (ret) {
			debugfs_remove_recursive(umem_shim_debugfs);
			return ret;
		}
		umem_shim_registered = true;
	}
	return 0;
}

void umem_shim_exit(void)
{
	if (umem_shim_registered)
		ib_umem_dmabuf_unregister_ops(&umem_rs_ops);
	debugfs_remove_recursive(umem_shim_debugfs);
}
