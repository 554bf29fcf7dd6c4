/*
 * mpathlab kernel shim (MIT): what <linux/device-mapper.h> gives a path
 * selector -- messages (captured), DMEMIT, status types, struct dm_dev.
 */
#ifndef MPL_DM_H
#define MPL_DM_H
#include "mpl_kernel.h"

#define DM_NAME "device-mapper"

typedef enum { STATUSTYPE_INFO, STATUSTYPE_TABLE, STATUSTYPE_IMA } status_type_t;

enum dm_queue_mode {
	DM_TYPE_NONE = 0,
	DM_TYPE_BIO_BASED = 1,
	DM_TYPE_REQUEST_BASED = 2,
	DM_TYPE_DAX_BIO_BASED = 3,
};

#define DM_MAPIO_SUBMITTED 0
#define DM_MAPIO_REMAPPED 1
#define DM_MAPIO_REQUEUE 0x200
#define DM_MAPIO_DELAY_REQUEUE 0x201
#define DM_MAPIO_KILL 4

struct dm_dev {
	struct block_device *bdev;
	void *dax_dev;
	fmode_t mode;
	char name[16];
};
struct dm_target;
struct dm_table;
struct mapped_device;
struct target_type;

/* A message goes to mpathlab's capture as "device-mapper: PREFIX: text". */
#define DMCRIT(fmt, ...) mpl_printk(KERN_CRIT DM_NAME ": " DM_MSG_PREFIX ": " fmt "\n", ##__VA_ARGS__)
#define DMERR(fmt, ...) mpl_printk(KERN_ERR DM_NAME ": " DM_MSG_PREFIX ": " fmt "\n", ##__VA_ARGS__)
#define DMWARN(fmt, ...) mpl_printk(KERN_WARNING DM_NAME ": " DM_MSG_PREFIX ": " fmt "\n", ##__VA_ARGS__)
#define DMINFO(fmt, ...) mpl_printk(KERN_INFO DM_NAME ": " DM_MSG_PREFIX ": " fmt "\n", ##__VA_ARGS__)
#define DMERR_LIMIT DMERR
#define DMWARN_LIMIT DMWARN
#define DMINFO_LIMIT DMINFO
#define DMDEBUG(fmt, ...) do { } while (0)
#define DMDEBUG_LIMIT DMDEBUG

/* Append to a status result; stops writing (and counting) once full. */
#define DMEMIT(...) (sz += ((sz >= maxlen) ? 0 : mpl_scnprintf(result + sz, maxlen - sz, __VA_ARGS__)))

static inline sector_t to_sector(unsigned long long n) { return n >> 9; }
static inline unsigned long to_bytes(sector_t n) { return (unsigned long)(n << 9); }

#endif /* MPL_DM_H */
