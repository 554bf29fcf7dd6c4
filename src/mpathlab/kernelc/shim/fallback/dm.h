/* mpathlab kernel shim (MIT).  Used only when the selector file has no dm.h beside it. */
#ifndef DM_INTERNAL_H
#define DM_INTERNAL_H
#include <linux/device-mapper.h>
#endif
