/*
 * mpathlab kernel shim (MIT).  Used only when the selector file has no
 * dm-mpath.h beside it: the path object the multipath core hands a selector.
 */
#ifndef DM_MPATH_H
#define DM_MPATH_H
struct dm_dev;
struct dm_path {
	struct dm_dev *dev;     /* the path's device */
	void *pscontext;        /* owned by the path selector */
};
void dm_pg_init_complete(struct dm_path *path, unsigned int err_flags);
#endif
