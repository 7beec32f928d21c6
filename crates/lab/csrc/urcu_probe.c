/* build.rs compiles this to learn whether liburcu's headers are there. */
#include <urcu/urcu-memb.h>
#include <urcu/urcu-qsbr.h>
