// SPDX-License-Identifier: GPL-2.0
/*
 * Reproducers for the dma-buf fixes of patches/linux-7.3/series/1-fixes,
 * for make check-fixes (scripts/fixes.sh). Plain C against the kernel's own
 * API, so that it builds on pristine 7.3.4 as well as on the fixed kernels.
 *
 * It binds QEMU's ivshmem-plain PCI function, which the test guests have,
 * and offers two debugfs files in /sys/kernel/debug/fixes_repro/:
 *
 * phys_vec  Writing N exports a dma-buf whose tables are built by
 *           dma_buf_phys_vec_to_sgt() over 64 KiB of the function's BAR 2
 *           (as vfio-pci's dma-bufs are), attaches it for the function
 *           itself, maps and unmaps it N times and drops it. Unfixed,
 *           every unmap leaks the table's scatterlist (kmemleak).
 * import    Writing a dma-buf file descriptor of the writer attaches that
 *           buffer for the function (a PCI device: 64 KiB segments unless
 *           its driver says otherwise), maps it once and unmaps it.
 *           Reading gives "ENTRIES LONGEST" of that mapping: unfixed,
 *           udmabuf and the system heap hand out entries longer than
 *           64 KiB, and DMA-API debugging warns as the exporter maps them.
 */

#include <linux/debugfs.h>
#include <linux/dma-buf.h>
#include <linux/dma-buf-mapping.h>
#include <linux/dma-mapping.h>
#include <linux/err.h>
#include <linux/fs.h>
#include <linux/kstrtox.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/pci.h>
#include <linux/pci-p2pdma.h>
#include <linux/scatterlist.h>

#define REPRO_BAR 2
#define REPRO_BYTES SZ_64K
#define REPRO_MAX_CYCLES 1024

struct repro {
	struct pci_dev *pdev;
	struct p2pdma_provider *provider;
	struct dentry *dir;
	/* Serializes the debugfs files; guards the result below. */
	struct mutex lock;
	unsigned int entries;
	unsigned int longest;
};

static struct repro *the_repro;

static struct sg_table *repro_map(struct dma_buf_attachment *attach,
				  enum dma_data_direction dir)
{
	struct repro *r = attach->dmabuf->priv;
	struct phys_vec range = {
		.paddr = pci_resource_start(r->pdev, REPRO_BAR),
		.len = REPRO_BYTES,
	};

	return dma_buf_phys_vec_to_sgt(attach, r->provider, &range, 1,
				       REPRO_BYTES, dir);
}

static void repro_unmap(struct dma_buf_attachment *attach,
			struct sg_table *sgt, enum dma_data_direction dir)
{
	dma_buf_free_sgt(attach, sgt, dir);
}

static void repro_release(struct dma_buf *dmabuf)
{
}

static const struct dma_buf_ops repro_ops = {
	.map_dma_buf = repro_map,
	.unmap_dma_buf = repro_unmap,
	.release = repro_release,
};

/*
 * Attaches @dmabuf for the function, maps and unmaps it @cycles times,
 * records what the last mapping held, detaches and drops the caller's
 * reference to @dmabuf. Only the DMA side of the tables is read: an
 * importer never looks at the pages.
 */
static int repro_attach_map(struct repro *r, struct dma_buf *dmabuf,
			    unsigned int cycles)
{
	struct dma_buf_attachment *attach;
	struct scatterlist *sg;
	struct sg_table *sgt;
	unsigned int i, j;
	int ret = 0;

	attach = dma_buf_attach(dmabuf, &r->pdev->dev);
	if (IS_ERR(attach)) {
		ret = PTR_ERR(attach);
		goto put;
	}
	for (i = 0; i < cycles; i++) {
		sgt = dma_buf_map_attachment_unlocked(attach, DMA_BIDIRECTIONAL);
		if (IS_ERR(sgt)) {
			ret = PTR_ERR(sgt);
			break;
		}
		r->entries = 0;
		r->longest = 0;
		for_each_sgtable_dma_sg(sgt, sg, j) {
			r->entries++;
			r->longest = max(r->longest, sg_dma_len(sg));
		}
		dma_buf_unmap_attachment_unlocked(attach, sgt, DMA_BIDIRECTIONAL);
	}
	dma_buf_detach(dmabuf, attach);
put:
	dma_buf_put(dmabuf);
	return ret;
}

static int repro_cycles(struct repro *r, unsigned int cycles)
{
	DEFINE_DMA_BUF_EXPORT_INFO(info);
	struct dma_buf *dmabuf;

	info.ops = &repro_ops;
	info.size = REPRO_BYTES;
	info.flags = O_RDWR;
	info.priv = r;
	dmabuf = dma_buf_export(&info);
	if (IS_ERR(dmabuf))
		return PTR_ERR(dmabuf);
	return repro_attach_map(r, dmabuf, cycles);
}

static int repro_import(struct repro *r, int fd)
{
	struct dma_buf *dmabuf;

	dmabuf = dma_buf_get(fd);
	if (IS_ERR(dmabuf))
		return PTR_ERR(dmabuf);
	return repro_attach_map(r, dmabuf, 1);
}

static ssize_t phys_vec_write(struct file *file, const char __user *buf,
			      size_t len, loff_t *ppos)
{
	struct repro *r = file->private_data;
	unsigned int cycles;
	int ret;

	ret = kstrtouint_from_user(buf, len, 0, &cycles);
	if (ret)
		return ret;
	if (!cycles || cycles > REPRO_MAX_CYCLES)
		return -EINVAL;
	mutex_lock(&r->lock);
	ret = repro_cycles(r, cycles);
	mutex_unlock(&r->lock);
	return ret ? ret : len;
}

static ssize_t import_write(struct file *file, const char __user *buf,
			    size_t len, loff_t *ppos)
{
	struct repro *r = file->private_data;
	int fd, ret;

	ret = kstrtoint_from_user(buf, len, 0, &fd);
	if (ret)
		return ret;
	mutex_lock(&r->lock);
	ret = repro_import(r, fd);
	mutex_unlock(&r->lock);
	return ret ? ret : len;
}

static ssize_t import_read(struct file *file, char __user *buf, size_t len,
			   loff_t *ppos)
{
	struct repro *r = file->private_data;
	char text[32];
	int n;

	mutex_lock(&r->lock);
	n = scnprintf(text, sizeof(text), "%u %u\n", r->entries, r->longest);
	mutex_unlock(&r->lock);
	return simple_read_from_buffer(buf, len, ppos, text, n);
}

static const struct file_operations phys_vec_fops = {
	.owner = THIS_MODULE,
	.open = simple_open,
	.write = phys_vec_write,
};

static const struct file_operations import_fops = {
	.owner = THIS_MODULE,
	.open = simple_open,
	.read = import_read,
	.write = import_write,
};

static int repro_probe(struct pci_dev *pdev, const struct pci_device_id *id)
{
	struct repro *r;
	int ret;

	if (the_repro)
		return -EBUSY;
	ret = pcim_enable_device(pdev);
	if (ret)
		return ret;
	ret = dma_set_mask_and_coherent(&pdev->dev, DMA_BIT_MASK(64));
	if (ret)
		return ret;
	ret = pcim_p2pdma_init(pdev);
	if (ret)
		return ret;
	r = devm_kzalloc(&pdev->dev, sizeof(*r), GFP_KERNEL);
	if (!r)
		return -ENOMEM;
	r->pdev = pdev;
	r->provider = pcim_p2pdma_provider(pdev, REPRO_BAR);
	if (!r->provider ||
	    pci_resource_len(pdev, REPRO_BAR) < REPRO_BYTES)
		return -ENODEV;
	mutex_init(&r->lock);
	r->dir = debugfs_create_dir("fixes_repro", NULL);
	debugfs_create_file("phys_vec", 0200, r->dir, r, &phys_vec_fops);
	debugfs_create_file("import", 0600, r->dir, r, &import_fops);
	pci_set_drvdata(pdev, r);
	the_repro = r;
	return 0;
}

static void repro_remove(struct pci_dev *pdev)
{
	struct repro *r = pci_get_drvdata(pdev);

	debugfs_remove_recursive(r->dir);
	mutex_destroy(&r->lock);
	the_repro = NULL;
}

static const struct pci_device_id repro_ids[] = {
	{ PCI_DEVICE(PCI_VENDOR_ID_REDHAT_QUMRANET, 0x1110) },	/* ivshmem */
	{ }
};
MODULE_DEVICE_TABLE(pci, repro_ids);

static struct pci_driver repro_driver = {
	.name = "fixes_repro",
	.id_table = repro_ids,
	.probe = repro_probe,
	.remove = repro_remove,
};
module_pci_driver(repro_driver);

MODULE_DESCRIPTION("Reproducers for the dma-buf fixes of the umem_dmabuf_rs series");
MODULE_LICENSE("GPL");
MODULE_IMPORT_NS("DMA_BUF");
