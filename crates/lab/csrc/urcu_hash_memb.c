/* The memb flavour of liburcu (sys_membarrier keeps readers barrier-free). */
#define _LGPL_SOURCE
#include <urcu/urcu-memb.h>

#define FLAVOR(name) urcu_memb_##name
#define LH(name) locklab_urcu_memb_##name
#include "urcu_hash.h"
