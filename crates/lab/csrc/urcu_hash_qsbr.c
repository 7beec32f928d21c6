/* The QSBR flavour of liburcu: empty read-side sections; each reader
 * reports quiescent states itself. */
#define _LGPL_SOURCE
#include <urcu/urcu-qsbr.h>

#define FLAVOR(name) urcu_qsbr_##name
#define LH(name) locklab_urcu_qsbr_##name
#include "urcu_hash.h"
